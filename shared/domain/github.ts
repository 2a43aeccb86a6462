/**
 * GitHub's public keys document for secret scanning: the default of `SECRET_SCANNING_KEYS_URL`.
 * Its own module, free of the report schemas (zod), so the endpoint functions, whose config names
 * it, don't load them (docs/performance.md "Import time").
 */
export const GITHUB_SECRET_SCANNING_KEYS_URL = 'https://api.github.com/meta/public_keys/secret_scanning';
