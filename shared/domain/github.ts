/**
 * GitHub's public keys document for secret scanning: the default of `SECRET_SCANNING_KEYS_URL`.
 * Apart from the report schemas (zod), which the endpoint functions, whose config names it, don't need.
 */
export const GITHUB_SECRET_SCANNING_KEYS_URL = 'https://api.github.com/meta/public_keys/secret_scanning';

/**
 * The keys document's URL when its scheme may be read: `https:`, or `file:` (tests, the local
 * stack); `http:` only where a caller allows it explicitly (tests against a local server).
 */
export const keysDocumentUrl = (raw: string, { allowHttp = false } = {}): URL | undefined => {
  if (!URL.canParse(raw)) return undefined;
  const url = new URL(raw);
  const allowed = url.protocol === 'https:' || url.protocol === 'file:' || (allowHttp && url.protocol === 'http:');
  return allowed ? url : undefined;
};
