/**
 * The keys repository's records, inputs and errors (shared/data/repositories/keys.ts), apart from
 * its I/O so the repository itself stays short.
 */
import type { ActivityEntry, KeyAction } from '../../domain/key-activity';
import type { KeyState } from '../../domain/key-state';
import type { Scope } from '../../domain/schemas';

/** A stored key, as everything outside this module sees it: never the plaintext, never the hash. */
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

/** The key item: the record, its hash, and the entry of its last action until it is copied out. */
export interface StoredKey extends ApiKeyRecord {
  key_hash: string;
  pending_activity?: ActivityEntry;
}

/** The settings an operator can change on a live key (`keys update`); `null` unsets one. */
export interface KeySettingsChange {
  name?: string;
  scopes?: Scope[];
  expires_at?: string | null;
  allowed_ips?: string[] | null;
  rate_limit?: string | null;
}

/** Fields whose before/after an activity entry records. */
export const RECORDED_FIELDS = [
  'name',
  'scopes',
  'expires_at',
  'allowed_ips',
  'rate_limit',
  'disabled_at',
  'revoked_at',
  'rolled_to',
  'rolled_from',
] as const;

/** Who acts and when: every key action records both. */
export interface Actor {
  actor: string;
  now?: Date;
}

export interface CreateKeyInput extends Partial<Actor> {
  branchId: string;
  scopes: Scope[];
  name?: string;
  expiresAt?: Date;
  /** Canonical CIDR entries (shared/domain/cidr.ts parseAllowlist). */
  allowedIps?: string[];
  /** Already validated, in its written form (`formatRateLimit`). */
  rateLimit?: string;
}

export interface KeyRef extends Actor {
  keyId: string;
  /** The key must belong to this branch; a key of another branch is as unknown as a missing one. */
  branchId: string;
}

export interface RollKeyInput extends Omit<KeyRef, 'actor'>, Partial<Actor> {
  /** How long the old key keeps working; it never expires later than it already would. */
  graceMs: number;
}

export interface RolledKey {
  /** The new key's value: the only copy there will ever be. */
  key: string;
  record: ApiKeyRecord;
  /** The old key as it is now: `rolled_to` set, `expires_at` at the end of the grace period. */
  previous: ApiKeyRecord;
}

/** What an action did: the key afterwards, and false when there was nothing to change. */
export interface KeyActionResult {
  record: ApiKeyRecord;
  changed: boolean;
}

/** Actor of actions taken without one (the tests' fixtures, keys made before activity existed). */
export const UNKNOWN_ACTOR = 'unknown';

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

export const toRecord = ({ key_hash: _hash, pending_activity: _pending, ...record }: StoredKey): ApiKeyRecord => record;

/**
 * What a rolled key does not inherit: its identity, its links, its own times and history. Everything
 * else (branch, name, scopes, IP allowlist, expiry, rate limit, and any attribute added later) is
 * copied, so a new key setting can't be lost in a roll.
 */
const NOT_INHERITED = new Set<string>([
  'key_hash',
  'key_id',
  'start',
  'created_at',
  'revoked_at',
  'disabled_at',
  'rolled_from',
  'rolled_to',
  'version',
  'pending_activity',
  'expiring_event_for',
]);
export const inheritedSettings = (stored: StoredKey): Record<string, unknown> =>
  Object.fromEntries(Object.entries(stored).filter(([name]) => !NOT_INHERITED.has(name)));
