import type { ApiMiddleware, ApiRequest } from './types';

export const API_KEY_EXPIRES_HEADER = 'Api-Key-Expires';

/**
 * `Api-Key-Expires: <ISO 8601 UTC>` on every response to a key that has an expiry, success or
 * error, once the key has been found (docs/decisions.md "Key lifecycle"): an integrator's
 * monitoring can warn before the key lapses, or before a rolled key's grace period ends.
 */
export const apiKeyExpires = (): ApiMiddleware => {
  const apiKeyExpiresAfter = ({ response, context }: ApiRequest): void => {
    const expiresAt = context.apiKey?.expires_at;
    if (!response || expiresAt === undefined) return;
    const time = Date.parse(expiresAt);
    if (Number.isNaN(time)) return;
    response.headers = { ...response.headers, [API_KEY_EXPIRES_HEADER]: new Date(time).toISOString() };
  };
  return { after: apiKeyExpiresAfter, onError: apiKeyExpiresAfter, name: 'apiKeyExpires' };
};
