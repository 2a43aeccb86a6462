import { hashApiKey, isWellFormedApiKey } from '../api-key';
import { expiredApiKey, invalidApiKey, missingApiKey, revokedApiKey } from '../http/errors';
import type { ApiKeyRecord } from '../repositories/keys';
import type { ApiMiddleware, ApiRequest } from './types';

export interface KeyLookup {
  getByHash(keyHash: string): Promise<ApiKeyRecord | undefined>;
}

export interface AuthenticateOptions {
  keys: KeyLookup;
  /** Clock, in epoch milliseconds. */
  now?: () => number;
}

const defaults = { now: Date.now };

// RFC 6750: `Bearer <token>`, scheme matched case-insensitively.
const AUTHORIZATION_PATTERN = /^[ \t]*([A-Za-z]+)(?:[ \t]+(.*?))?[ \t]*$/s;

/** The bearer token of a request, or undefined when there is no `Bearer <token>` header. */
export const readBearerToken = (headers: Record<string, string | undefined> | undefined): string | undefined => {
  const value = headers?.authorization;
  if (value === undefined) return undefined;
  const match = AUTHORIZATION_PATTERN.exec(value);
  if (!match || match[1]?.toLowerCase() !== 'bearer' || !match[2]) return undefined;
  return match[2];
};

/**
 * Authorization header → key record. Order: header → format and checksum (no database read
 * for a malformed key) → lookup → revoked → expired. The found key is put on the context
 * before it is refused, so a call with a revoked or expired key is still recorded against it.
 */
export const authenticate = (opts: AuthenticateOptions): ApiMiddleware => {
  const { keys, now } = { ...defaults, ...opts };

  const authenticateBefore = async ({ event, context }: ApiRequest): Promise<void> => {
    const token = readBearerToken(event.headers);
    if (token === undefined) throw missingApiKey();
    if (!isWellFormedApiKey(token)) throw invalidApiKey();
    const apiKey = await keys.getByHash(hashApiKey(token));
    if (!apiKey) throw invalidApiKey();
    context.apiKey = apiKey;
    if (apiKey.revoked_at !== undefined) throw revokedApiKey();
    if (apiKey.expires_at !== undefined && Date.parse(apiKey.expires_at) <= now()) throw expiredApiKey();
  };

  return { before: authenticateBefore, name: 'authenticate' };
};
