import { COMMON_HEADERS } from '../http/response';
import type { ApiContext, ApiMiddleware, ApiRequest } from './types';

export const API_KEY_EXPIRES_HEADER = 'Api-Key-Expires';

/**
 * `Api-Key-Expires: <ISO 8601 UTC>` for a key that has an expiry, once the key has been found,
 * success or error (docs/decisions.md "Key lifecycle"): an integrator's monitoring can warn before
 * the key lapses, or before a rolled key's grace period ends.
 */
const keyExpiry = ({ apiKey }: ApiContext): string | undefined => {
  const time = apiKey?.expires_at === undefined ? Number.NaN : Date.parse(apiKey.expires_at);
  return Number.isNaN(time) ? undefined : new Date(time).toISOString();
};

/**
 * Adds the headers every response carries, success or error, the request id, the key's expiry,
 * and what other middlewares put on `context.responseHeaders` (the rate-limit fields).
 */
export const responseHeaders = (): ApiMiddleware => {
  const addHeaders = ({ response, context }: ApiRequest): void => {
    if (!response) return;
    const headers: Record<string, string> = {
      ...COMMON_HEADERS,
      ...response.headers,
      ...context.responseHeaders,
      'X-Request-Id': context.requestId,
    };
    const expires = keyExpiry(context);
    if (expires !== undefined) headers[API_KEY_EXPIRES_HEADER] = expires;
    response.headers = headers;
  };
  return { after: addHeaders, onError: addHeaders, name: 'responseHeaders' };
};
