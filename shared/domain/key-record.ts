/**
 * An API key as everything outside the keys table sees it (never its value, never its hash),
 * the settings an operator may change, and the errors of key actions.
 */
import type { KeyAction } from './key-activity';
import type { KeyState } from './key-state';
import type { Scope } from './schemas';

/** An API key: never the plaintext, never the hash. */
export interface ApiKeyRecord {
  key_id: string;
  branch_id: string;
  name: string;
  scopes: Scope[];
  /** First characters of the key value, for display. */
  start: string;
  created_at: string;
  expires_at?: string;
  revoked_at?: string;
  /** Set while the key is disabled (`keys disable`): refused with 401 disabled_api_key. */
  disabled_at?: string;
  /** Canonical CIDR blocks the key may be used from (shared/domain/cidr.ts); absent: anywhere. */
  allowed_ips?: string[];
  /** The key this one replaced (`keys roll`). */
  rolled_from?: string;
  /** The key that replaced this one; this key then expires at the end of the grace period. */
  rolled_to?: string;
  /** `N/s`, `N/min` or `N/h`; absent: the deployment's default (shared/domain/rate-limit.ts). */
  rate_limit?: string;
  /** Counts the key's actions; each action's activity entry is keyed by it. Absent on old keys: 0. */
  version?: number;
  /** The expiry a `Key Expiring` event was sent for, so it is sent once per expiry (shared/lambda/key-expiry.ts). */
  expiring_event_for?: string;
}

/** The settings an operator can change on a live key (`keys update`); `null` unsets one. */
export interface KeySettingsChange {
  name?: string;
  scopes?: Scope[];
  expires_at?: string | null;
  allowed_ips?: string[] | null;
  rate_limit?: string | null;
}

/**
 * What a rolled key does not inherit: its identity, its links, its own times and history. Everything
 * else (branch, name, scopes, IP allowlist, expiry, rate limit, and any setting added later) is
 * copied, so a new key setting can't be lost in a roll.
 */
const NOT_INHERITED = new Set<string>([
  'key_id',
  'start',
  'created_at',
  'revoked_at',
  'disabled_at',
  'rolled_from',
  'rolled_to',
  'version',
  'expiring_event_for',
] satisfies (keyof ApiKeyRecord)[]);

/** The settings a key rolled from `record` starts with. */
export const inheritedSettings = (record: ApiKeyRecord): Pick<ApiKeyRecord, 'branch_id' | 'name' | 'scopes'> =>
  Object.fromEntries(Object.entries(record).filter(([name]) => !NOT_INHERITED.has(name))) as ApiKeyRecord;

/** A key's state forbids the action: `state` says why (`grace`: it was rolled, see `rolledTo`). */
export class KeyActionRefusedError extends Error {
  override name = 'KeyActionRefusedError';
  constructor(
    readonly keyId: string,
    readonly action: KeyAction,
    readonly state: KeyState,
    readonly rolledTo?: string,
  ) {
    super(`Key ${keyId} cannot be ${action}: it is ${state}`);
  }
}

/** Why a key cannot be rolled, as `keys roll` reports it. */
export type NotRollableReason = 'revoked' | 'expired' | 'rolled' | 'disabled';

export class KeyNotRollableError extends KeyActionRefusedError {
  override name = 'KeyNotRollableError';
  readonly reason: NotRollableReason;
  constructor(keyId: string, state: KeyState, rolledTo?: string) {
    super(keyId, 'rolled', state, rolledTo);
    this.reason = state === 'grace' || state === 'active' ? 'rolled' : state;
  }
}

export class KeyNotFoundError extends Error {
  override name = 'KeyNotFoundError';
}

/** The key changed between its read and the write (another operator acted): nothing was written. */
export class KeyChangedError extends Error {
  override name = 'KeyChangedError';
}
