/**
 * The one answer to "is this key usable now" (docs/decisions.md "Key state"): the API's
 * authentication, the keys repository, the operator library, the CLI and the console all ask
 * this function, and it is the only code that compares a key's expiry with the clock.
 */

/** What a key can be at an instant. Only `active` and `grace` open anything. */
export const KEY_STATES = ['active', 'grace', 'disabled', 'expired', 'revoked'] as const;
export type KeyState = (typeof KEY_STATES)[number];

/** The fields of a key record the state depends on. */
export interface KeyStateFields {
  readonly revoked_at?: string;
  readonly disabled_at?: string;
  readonly expires_at?: string;
  /** Set by a roll: the old key then works until `expires_at` (the end of the grace period). */
  readonly rolled_to?: string;
}

/**
 * Milliseconds from `now` until the key expires (0 or less: it has), or undefined when it never
 * does. An expiry that is not a readable time counts as passed (fails closed).
 */
export const msUntilExpiry = (key: KeyStateFields, now: Date | number): number | undefined => {
  if (key.expires_at === undefined) return undefined;
  const expires = Date.parse(key.expires_at);
  return Number.isNaN(expires) ? Number.NEGATIVE_INFINITY : expires - Number(now);
};

/**
 * The key's state at `now`. Final states first: revoked, then expired (at the expiry instant
 * itself the key is expired), then disabled (reversible: enabling it helps only a key that is
 * neither), then grace (rolled, old key still working), else active.
 */
export const keyState = (key: KeyStateFields, now: Date | number): KeyState => {
  if (key.revoked_at !== undefined) return 'revoked';
  const remaining = msUntilExpiry(key, now);
  if (remaining !== undefined && !(remaining > 0)) return 'expired';
  if (key.disabled_at !== undefined) return 'disabled';
  if (key.rolled_to !== undefined) return 'grace';
  return 'active';
};

/** True when a call with the key would pass authentication (scope and IP aside). */
export const isUsable = (state: KeyState): boolean => state === 'active' || state === 'grace';
