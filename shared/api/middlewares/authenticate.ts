import { hashApiKey, isWellFormedApiKey } from '../../domain/api-key';
import { keyState, type KeyState } from '../../domain/key-state';
import { type ApiError, disabledApiKey, expiredApiKey, invalidApiKey, missingApiKey, revokedApiKey } from '../errors';
import type { KeyReader } from '../../data/repositories/key-reader';
import type { ApiMiddleware, ApiRequest } from './types';

export interface AuthenticateOptions {
  keys: Pick<KeyReader, 'getByHash'>;
}

const isOws = (char: string | undefined): boolean => char === ' ' || char === '\t';

/**
 * The bearer token (RFC 6750: scheme case-insensitive, spaces and tabs around the parts ignored),
 * or undefined. A linear scan, not a regular expression: a backtracking pattern's CPU grows
 * quadratically on a header of spaces, before any key is checked.
 */
export const readBearerToken = (headers: Record<string, string | undefined> | undefined): string | undefined => {
  const value = headers?.authorization;
  if (value === undefined) return undefined;
  // As nearly every caller sends it: `Bearer <token>`, nothing around it.
  if (value.startsWith('Bearer ') && !isOws(value[7]) && !isOws(value[value.length - 1])) {
    return value.slice(7);
  }
  let start = 0;
  let end = value.length;
  while (start < end && isOws(value[start])) start += 1;
  while (end > start && isOws(value[end - 1])) end -= 1;
  let tokenStart = start;
  while (tokenStart < end && !isOws(value[tokenStart])) tokenStart += 1;
  if (value.slice(start, tokenStart).toLowerCase() !== 'bearer') return undefined;
  while (tokenStart < end && isOws(value[tokenStart])) tokenStart += 1;
  return tokenStart < end ? value.slice(tokenStart, end) : undefined;
};

/** The refusal for each state that opens nothing (shared/domain/key-state.ts). */
const REFUSALS: Partial<Record<KeyState, () => ApiError>> = {
  revoked: revokedApiKey,
  expired: expiredApiKey,
  disabled: disabledApiKey,
};

/**
 * Authorization header → key record: format and checksum first (no read for a malformed key), then
 * the lookup, then the key's state. The key is put on the context before it is refused, so a call
 * with a revoked, expired or disabled key is still counted and recorded against it.
 */
export const authenticate = (opts: AuthenticateOptions): ApiMiddleware => {
  const { keys } = opts;

  const authenticateBefore = async ({ event, context }: ApiRequest): Promise<void> => {
    const token = readBearerToken(event.headers);
    if (token === undefined) throw missingApiKey();
    if (!isWellFormedApiKey(token)) throw invalidApiKey();
    const apiKey = await keys.getByHash(hashApiKey(token));
    if (!apiKey) throw invalidApiKey();
    context.apiKey = apiKey;
    // The key's state when the call arrived; its usage record and rate-limit window go by that time too.
    const refusal = REFUSALS[keyState(apiKey, context.receivedAt?.getTime() ?? Date.now())];
    if (refusal) throw refusal();
  };

  return { before: authenticateBefore, name: 'authenticate' };
};
