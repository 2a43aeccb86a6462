/**
 * A key's rate limit: at most `limit` calls in each fixed window of `windowSeconds`, aligned to
 * the clock (docs/decisions.md "Rate limits"). Written `N/s`, `N/min` or `N/h` everywhere a person
 * reads or types one: the key record, `keys create --rate-limit`, `keys list`, DEFAULT_RATE_LIMIT.
 */

const UNITS = { s: 1, min: 60, h: 3600 } as const;
export type RateLimitUnit = keyof typeof UNITS;
export type WindowSeconds = (typeof UNITS)[RateLimitUnit];
/** Every window a limit can have, in seconds (the `w` of `RateLimit-Policy`). */
export const WINDOW_SECONDS: readonly WindowSeconds[] = Object.values(UNITS);

/** The most calls one window may allow: beyond it a limit is a typo, not a policy. */
export const MAX_RATE_LIMIT = 1_000_000;
/** A deployment's default when DEFAULT_RATE_LIMIT is not set. */
export const DEFAULT_RATE_LIMIT = '50/s';

/**
 * Above this many calls per window a key's counter is taken in blocks (docs/capacity.md "Per key"):
 * at most this many blocks per window, so one counter item takes ≤ LEASE_ABOVE + containers writes a
 * window whatever the arrival rate, well under the ~1,000 writes/s one DynamoDB item takes.
 */
export const LEASE_ABOVE = 500;

/** Calls one counter write takes for a key of `limit`: 1 (exact, per call) up to `leaseAbove`, then ceil(limit / leaseAbove). */
export const blockSize = (limit: number, leaseAbove: number = LEASE_ABOVE): number =>
  limit <= leaseAbove ? 1 : Math.ceil(limit / leaseAbove);

/**
 * Calls a block of `block` may admit, the counter having answered `count` with the block added:
 * the block's units that land at or below the limit, clamp(limit − (count − block), 0, block).
 */
export const tokensGranted = (limit: number, count: number, block: number): number =>
  Math.min(block, Math.max(0, limit - (count - block)));

export interface RateLimit {
  readonly limit: number;
  readonly windowSeconds: WindowSeconds;
}

export class InvalidRateLimitError extends Error {
  override name = 'InvalidRateLimitError';
}

// Whole number without leading zeros, then a unit. No sign, fraction, exponent or spaces.
const FORMAT = /^(0|[1-9][0-9]{0,15})\/(s|min|h)$/;

/**
 * Parses `<N>/s`, `<N>/min` or `<N>/h` (N from 1 to MAX_RATE_LIMIT). The messages never repeat
 * the value: it may come from a terminal or a stored record and is shown to a person.
 */
export const parseRateLimit = (text: string): RateLimit => {
  const match = FORMAT.exec(text);
  if (!match) {
    throw new InvalidRateLimitError(
      `Rate limit must be a whole number of calls per s, min or h, written like 50/s, 600/min or 10000/h`,
    );
  }
  const limit = Number(match[1]);
  if (limit < 1) throw new InvalidRateLimitError('Rate limit must allow at least 1 call per window');
  if (limit > MAX_RATE_LIMIT) {
    throw new InvalidRateLimitError(`Rate limit must allow at most ${MAX_RATE_LIMIT} calls per window`);
  }
  return { limit, windowSeconds: UNITS[match[2] as RateLimitUnit] };
};

const UNIT_OF: Record<WindowSeconds, RateLimitUnit> = { 1: 's', 60: 'min', 3600: 'h' };

/** The written form, e.g. `50/s`. */
export const formatRateLimit = ({ limit, windowSeconds }: RateLimit): string => `${limit}/${UNIT_OF[windowSeconds]}`;

/** A stored key's limit; a key stored before limits existed (or with an unreadable one) gets the default. */
export const rateLimitOf = (stored: string | undefined, fallback: RateLimit): RateLimit => {
  if (stored === undefined) return fallback;
  try {
    return parseRateLimit(stored);
  } catch {
    return fallback;
  }
};
