/**
 * The keys repository's records, inputs and errors (shared/data/repositories/keys.ts), apart from
 * its I/O so the repository itself stays short.
 */
import type { ActivityEntry } from '../../domain/key-activity';
import type { ApiKeyRecord } from '../../domain/key-record';
import type { Scope } from '../../domain/schemas';

/** The key item: the record, its hash, and the entry of its last action until it is copied out. */
export interface StoredKey extends ApiKeyRecord {
  key_hash: string;
  pending_activity?: ActivityEntry;
}

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
