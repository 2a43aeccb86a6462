/**
 * The keys table: every key action as one conditional write on the version read, carrying its
 * activity entry until the entry is copied and its key event sent (docs/decisions.md "Key
 * activity", "Key events"). The hot-path lookup is KeyReader (key-reader.ts).
 */
import { randomBytes } from 'node:crypto';
import { ResourceNotFoundException } from '@aws-sdk/client-dynamodb';
import {
  DeleteCommand,
  paginateScan,
  PutCommand,
  QueryCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { apiKeyStart, generateApiKey, hashApiKey } from '../../domain/api-key';
import { diffSettings, type ActivityEntry, type KeyAction } from '../../domain/key-activity';
import { keyEventOfAction } from '../../domain/key-events';
import {
  KeyActionRefusedError,
  KeyChangedError,
  KeyNotFoundError,
  KeyNotRollableError,
  RECORDED_FIELDS,
  type ApiKeyRecord,
  type KeySettingsChange,
} from '../../domain/key-record';
import { keyState, msUntilExpiry, type KeyState } from '../../domain/key-state';
import type { Scope } from '../../domain/schemas';
import { ConditionNotMetError } from '../data-store-errors';
import { DynamoRepository } from '../dynamodb';
import { KeyEventNotSentError, noKeyEvents, type KeyEventEmitter } from '../key-events';
import { KEYS_BY_BRANCH_INDEX, KEYS_BY_ID_INDEX } from '../tables';
import type { ActivityRepository } from './activity';
import { KeyReader, toRecord, type StoredKey } from './key-reader';

export { toRecord, type StoredKey } from './key-reader';

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

/**
 * An action's entry not finished right after its write: it stays on the key item for the next
 * finisher (docs/decisions.md "Key events"), and this says what did not happen and why.
 */
export interface PendingEntry {
  entry: ActivityEntry;
  /** Copied to the activity table (false also when this repository has no activity table). */
  copied: boolean;
  /** The copy's error, when the copy was tried and failed. */
  copyError?: unknown;
  /** Its key event sent (the emitter logs why not, "Key event not sent"). */
  sent: boolean;
}

export interface RolledKey {
  /** The new key's value: the only copy there will ever be. */
  key: string;
  record: ApiKeyRecord;
  /** The old key as it is now: `rolled_to` set, `expires_at` at the end of the grace period. */
  previous: ApiKeyRecord;
  /** The roll's entries (the old key's `rolled`, the new key's `created`) not finished yet. */
  pending: PendingEntry[];
}

/** What an action did: the key afterwards, false when there was nothing to change, and its entry if pending. */
export interface KeyActionResult {
  record: ApiKeyRecord;
  changed: boolean;
  pending: PendingEntry[];
}

/** Actor of actions taken without one (the tests' fixtures, keys made before activity existed). */
export const UNKNOWN_ACTOR = 'unknown';

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
const inheritedSettings = (stored: StoredKey): Record<string, unknown> =>
  Object.fromEntries(Object.entries(stored).filter(([name]) => !NOT_INHERITED.has(name)));

/** One action's change to a key item: attributes set and removed. */
interface KeyMutation {
  set: Record<string, unknown>;
  remove: readonly string[];
}

/** The action's entry, as the key item carries it until it is copied to the activity table. */
const entryOf = (
  before: Partial<StoredKey>,
  after: ApiKeyRecord,
  action: KeyAction,
  actor: string,
  now: Date,
  details?: Record<string, string>,
): ActivityEntry => ({
  activity_id: `${after.key_id}#${after.version ?? 0}`,
  branch_id: after.branch_id,
  key_id: after.key_id,
  key_name: after.name,
  action,
  actor,
  at: now.toISOString(),
  changes: diffSettings(before, after as unknown as Record<string, unknown>, RECORDED_FIELDS),
  ...(details ? { details } : {}),
});

const newKeyId = (): string => `key_${randomBytes(12).toString('base64url')}`;

/** Attempts of one action when other actions on the same key keep winning the race. */
const MAX_ACTION_ATTEMPTS = 3;

/** What an action does to a key in a given state: a mutation, or undefined when nothing changes. */
type Plan = (stored: StoredKey, state: KeyState, now: Date) => KeyMutation | undefined;

const refuseUnless =
  (action: KeyAction, allowed: readonly KeyState[]) =>
  (stored: StoredKey, state: KeyState): void => {
    if (!allowed.includes(state)) throw new KeyActionRefusedError(stored.key_id, action, state, stored.rolled_to);
  };

/** `null` settings are removed from the item; the others are set. */
const mutationOf = (change: KeySettingsChange): KeyMutation => {
  const entries = Object.entries(change).filter(([, value]) => value !== undefined);
  return {
    set: Object.fromEntries(entries.filter(([, value]) => value !== null)),
    remove: entries.filter(([, value]) => value === null).map(([field]) => field),
  };
};

/** True when the mutation would leave every field as it is. */
const isNoChange = (stored: StoredKey, { set, remove }: KeyMutation): boolean =>
  Object.entries(set).every(
    ([field, value]) => JSON.stringify(stored[field as keyof StoredKey]) === JSON.stringify(value),
  ) && remove.every((field) => stored[field as keyof StoredKey] === undefined);

export class KeysRepository extends DynamoRepository {
  private readonly reader: KeyReader;

  /**
   * @param activity where action entries are copied; without it they stay on the key item for
   * a repository that has it to finish (the next action, an activity read, a sweep, the stream).
   * @param keyEvents where each action's key event goes; sending never fails the action.
   */
  constructor(
    client: DynamoDBDocumentClient,
    tableName: string,
    private readonly activity?: ActivityRepository,
    private readonly keyEvents: KeyEventEmitter = noKeyEvents,
  ) {
    super(client, tableName);
    this.reader = new KeyReader(client, tableName);
  }

  /** The key whose value hashes to `keyHash`, read strongly consistent. */
  getByHash(keyHash: string): Promise<ApiKeyRecord | undefined> {
    return this.reader.getByHash(keyHash);
  }

  /** Creates a key; the returned plaintext `key` is the only copy there will ever be. */
  async create(input: CreateKeyInput): Promise<{ key: string; record: ApiKeyRecord; pending: PendingEntry[] }> {
    const now = input.now ?? new Date();
    const { key, keyHash, record, entry } = await this.putNew(
      {
        key_id: newKeyId(),
        branch_id: input.branchId,
        name: input.name ?? 'API key',
        scopes: [...new Set(input.scopes)],
        created_at: now.toISOString(),
        ...(input.expiresAt ? { expires_at: input.expiresAt.toISOString() } : {}),
        ...(input.rateLimit ? { rate_limit: input.rateLimit } : {}),
        ...(input.allowedIps && input.allowedIps.length > 0 ? { allowed_ips: [...input.allowedIps] } : {}),
      },
      input.actor ?? UNKNOWN_ACTOR,
      now,
    );
    return { key, record, pending: await this.publish(entry, keyHash, record) };
  }

  /** Every key of a branch, newest first. */
  async listByBranch(branchId: string): Promise<ApiKeyRecord[]> {
    return (await this.listStored(branchId)).map(toRecord);
  }

  async getById(keyId: string): Promise<ApiKeyRecord | undefined> {
    const stored = await this.findStoredById(keyId);
    return stored ? toRecord(stored) : undefined;
  }

  /**
   * The key (of the branch, when one is given), read strongly consistent; another branch's key is
   * as unknown as none.
   */
  private async requireStored({ keyId, branchId }: { keyId: string; branchId?: string }): Promise<StoredKey> {
    const found = await this.findStoredById(keyId);
    const stored = found && (await this.reader.getStored(found.key_hash));
    if (!stored || (branchId !== undefined && stored.branch_id !== branchId)) {
      throw new KeyNotFoundError(`No key with id ${keyId}`);
    }
    return stored;
  }

  /**
   * Runs one action: plans it on the key as read and writes it on that version; when another
   * action got there first, plans again on the key as it is now (which may then need no change).
   * @throws KeyNotFoundError, KeyActionRefusedError, KeyChangedError (lost the race every time)
   */
  private async perform(
    ref: Omit<KeyRef, 'branchId'> & { branchId?: string },
    action: KeyAction,
    plan: Plan,
    details?: Record<string, string>,
  ): Promise<KeyActionResult> {
    const now = ref.now ?? new Date();
    let stored = await this.requireStored(ref);
    for (let attempt = 1; ; attempt += 1) {
      const mutation = plan(stored, keyState(stored, now), now);
      if (!mutation || isNoChange(stored, mutation)) return { record: toRecord(stored), changed: false, pending: [] };
      try {
        const { record, entry } = await this.applyAction(stored, action, ref.actor, now, mutation, details);
        return { record, changed: true, pending: await this.publish(entry, stored.key_hash, record) };
      } catch (error) {
        if (!(error instanceof ConditionNotMetError)) throw error;
        const current = await this.reader.getStored(stored.key_hash);
        if (!current) throw new KeyNotFoundError(`No key with id ${ref.keyId}`);
        if (attempt >= MAX_ACTION_ATTEMPTS) throw new KeyChangedError(`Key ${ref.keyId} kept changing; try again`);
        stored = current;
      }
    }
  }

  /** Changes settings of a live (active or disabled) key; unchanged settings write nothing. */
  async update(ref: KeyRef, change: KeySettingsChange): Promise<KeyActionResult> {
    return this.perform(ref, 'updated', (stored, state) => {
      refuseUnless('updated', ['active', 'disabled'])(stored, state);
      return mutationOf(change);
    });
  }

  /** Disables a key until it is enabled: 401 disabled_api_key meanwhile. Disabling twice changes nothing. */
  async disable(ref: KeyRef): Promise<KeyActionResult> {
    return this.perform(ref, 'disabled', (stored, state, now) => {
      if (state === 'disabled') return undefined;
      refuseUnless('disabled', ['active', 'grace'])(stored, state);
      return { set: { disabled_at: now.toISOString() }, remove: [] };
    });
  }

  /** Enables a disabled key; an enabled one is left as it is. Revoked and expired keys are refused. */
  async enable(ref: KeyRef): Promise<KeyActionResult> {
    return this.perform(ref, 'enabled', (stored, state) => {
      refuseUnless('enabled', ['active', 'grace', 'disabled'])(stored, state);
      return stored.disabled_at === undefined ? undefined : { set: {}, remove: ['disabled_at'] };
    });
  }

  /**
   * Revokes a key from now on; revoking a revoked key changes nothing. The caller checks the branch.
   * @param leak a secret-scanning report's facts (`url`, `source`): the entry is then `leaked`
   * @throws KeyNotFoundError when no key has this id
   */
  async revoke(
    keyId: string,
    now = new Date(),
    actor = UNKNOWN_ACTOR,
    leak?: Record<string, string>,
  ): Promise<KeyActionResult> {
    return this.perform(
      { keyId, now, actor },
      leak ? 'leaked' : 'revoked',
      (stored, _state, at) =>
        stored.revoked_at === undefined ? { set: { revoked_at: at.toISOString() }, remove: [] } : undefined,
      leak,
    );
  }

  /**
   * Rolls an active key: a new key with its settings, the old one ending at now + grace (never later).
   * Two writes, no transaction (docs/decisions.md "Key lifecycle"): the new key first, then the old
   * one linked on the version read; if that fails and it is not linked, the new key is deleted.
   * @throws KeyNotFoundError when no key of this branch has this id
   * @throws KeyNotRollableError when the key is revoked, expired, disabled or already rolled
   */
  async roll({ keyId, branchId, graceMs, now = new Date(), actor = UNKNOWN_ACTOR }: RollKeyInput): Promise<RolledKey> {
    const stored = await this.requireStored({ keyId, branchId });
    const state = keyState(stored, now);
    if (state !== 'active') throw new KeyNotRollableError(keyId, state, stored.rolled_to);
    const remaining = msUntilExpiry(stored, now);
    const endsAt = new Date(now.getTime() + Math.min(graceMs, remaining ?? graceMs)).toISOString();
    const created = await this.putNew(
      {
        ...(inheritedSettings(stored) as Pick<ApiKeyRecord, 'branch_id' | 'name' | 'scopes'>),
        key_id: newKeyId(),
        created_at: now.toISOString(),
        rolled_from: keyId,
      },
      actor,
      now,
      { rolled_from: keyId },
    );
    const newId = created.record.key_id;
    const newHash = created.keyHash;
    try {
      const mutation = { set: { expires_at: endsAt, rolled_to: newId }, remove: [] };
      const { record: previous, entry } = await this.applyAction(stored, 'rolled', actor, now, mutation, {
        rolled_to: newId,
      });
      const pending = await this.publish(entry, stored.key_hash, previous);
      pending.push(...(await this.publish(created.entry, newHash, created.record)));
      return { key: created.key, record: created.record, previous, pending };
    } catch (error) {
      const current = await this.reader.getStored(stored.key_hash).catch(() => undefined);
      if (current === undefined) throw error; // outcome unknown: leave the new key for the operator to see
      if (current.rolled_to === newId) {
        const pending = await this.publish(created.entry, newHash, created.record);
        return { key: created.key, record: created.record, previous: toRecord(current), pending };
      }
      await this.deleteByHash(newHash).catch(() => undefined);
      if (error instanceof ConditionNotMetError) {
        const stateNow = keyState(current, now);
        if (stateNow === 'active') throw new KeyChangedError(`Key ${keyId} changed during the roll; try again`);
        throw new KeyNotRollableError(keyId, stateNow, current.rolled_to);
      }
      throw error;
    }
  }

  /**
   * Revokes the key a secret scanning report found (docs/decisions.md "Leaked keys") as one `leaked`
   * action with the report's url and source; `revoked` is false when it already was, and the result
   * undefined when no key has this hash.
   */
  async revokeLeaked(
    keyHash: string,
    report: { url: string; source: string },
    actor: string,
    now = new Date(),
  ): Promise<{ record: ApiKeyRecord; revoked: boolean; pending: PendingEntry[] } | undefined> {
    let stored = await this.reader.getStored(keyHash);
    for (let attempt = 1; stored; attempt += 1) {
      if (stored.revoked_at !== undefined) return { record: toRecord(stored), revoked: false, pending: [] };
      try {
        const mutation = { set: { revoked_at: now.toISOString() }, remove: [] };
        const { record, entry } = await this.applyAction(stored, 'leaked', actor, now, mutation, report);
        return { record, revoked: true, pending: await this.publish(entry, keyHash, record) };
      } catch (error) {
        if (!(error instanceof ConditionNotMetError) || attempt >= MAX_ACTION_ATTEMPTS) throw error;
        stored = await this.reader.getStored(keyHash);
      }
    }
    return undefined;
  }

  /**
   * Keys not revoked whose expiry falls between `now` and `until` and whose `Key Expiring` event
   * has not been claimed for that expiry. A Scan: run by the daily scheduled function only, never
   * on a request path (docs/decisions.md "Key events").
   */
  async listExpiring(now: Date, until: Date): Promise<ApiKeyRecord[]> {
    const pages = paginateScan(
      { client: this.client },
      {
        TableName: this.tableName,
        FilterExpression:
          'expires_at BETWEEN :now AND :until AND attribute_not_exists(revoked_at)' +
          ' AND (attribute_not_exists(expiring_event_for) OR expiring_event_for <> expires_at)',
        ExpressionAttributeValues: { ':now': now.toISOString(), ':until': until.toISOString() },
      },
    );
    const records: ApiKeyRecord[] = [];
    await this.run('Scan', async () => {
      for await (const page of pages) records.push(...((page.Items ?? []) as StoredKey[]).map(toRecord));
    });
    return records;
  }

  /**
   * Claims the `Key Expiring` event of a key's current expiry: true for the one caller that gets to
   * send it, false when it was claimed already or the expiry changed (an edited expiry gets its own).
   * Not a key action: no version, no activity entry.
   */
  async claimExpiringEvent(keyId: string, expiresAt: string): Promise<boolean> {
    const stored = await this.findStoredById(keyId);
    if (!stored || stored.expires_at !== expiresAt || stored.expiring_event_for === expiresAt) return false;
    try {
      await this.run('UpdateItem', () =>
        this.client.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: { key_hash: stored.key_hash },
            UpdateExpression: 'SET expiring_event_for = :expires',
            ConditionExpression:
              'expires_at = :expires AND (attribute_not_exists(expiring_event_for) OR expiring_event_for <> :expires)',
            ExpressionAttributeValues: { ':expires': expiresAt },
          }),
        ),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionNotMetError) return false;
      throw error;
    }
  }

  /**
   * Finishes every entry still pending on a branch's keys, so the activity read next agrees with
   * the keys; a failed copy fails the read, an unsent event leaves its entry pending. Returns how
   * many there were.
   */
  async flushActivity(branchId: string): Promise<number> {
    if (!this.activity) return 0;
    const pending = (await this.listStored(branchId)).filter((stored) => stored.pending_activity);
    for (const stored of pending) await this.finish(stored.pending_activity!, stored.key_hash, stored.start);
    return pending.length;
  }

  /**
   * Finishes the entry pending on one key item, read strongly consistent: nothing when there is
   * none (finished already, or the key deleted).
   * @returns whether an entry was pending, and whether its event is now sent
   * @throws when the copy to the activity table fails
   */
  async finishPending(keyHash: string): Promise<{ pending: boolean; sent: boolean }> {
    const stored = await this.reader.getStored(keyHash);
    if (!stored?.pending_activity) return { pending: false, sent: false };
    return { pending: true, sent: await this.finish(stored.pending_activity, keyHash, stored.start) };
  }

  /**
   * Finishes every entry pending anywhere in the table (the local stack's start and operator
   * commands: docs/decisions.md "Key events"). A Scan of the whole table, filtered to items that
   * carry one: its reads grow with the number of keys, so it is never run on a request path.
   * @returns how many were pending and how many of their events are still unsent
   */
  async finishAllPending(): Promise<{ pending: number; unsent: number }> {
    const pages = paginateScan(
      { client: this.client },
      { TableName: this.tableName, FilterExpression: 'attribute_exists(pending_activity)', ConsistentRead: true },
    );
    const found: StoredKey[] = [];
    try {
      await this.run('Scan', async () => {
        for await (const page of pages) found.push(...((page.Items ?? []) as StoredKey[]));
      });
    } catch (error) {
      // No keys table yet (a fresh local DynamoDB before `tables create`): nothing is pending.
      if ((error as Error).cause instanceof ResourceNotFoundException) return { pending: 0, unsent: 0 };
      throw error;
    }
    let unsent = 0;
    for (const stored of found) {
      if (!(await this.finish(stored.pending_activity!, stored.key_hash, stored.start))) unsent += 1;
    }
    return { pending: found.length, unsent };
  }

  private async findStoredById(keyId: string): Promise<StoredKey | undefined> {
    const { Items } = await this.run('Query', () =>
      this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: KEYS_BY_ID_INDEX,
          KeyConditionExpression: 'key_id = :id',
          ExpressionAttributeValues: { ':id': keyId },
          Limit: 1,
        }),
      ),
    );
    return Items?.[0] as StoredKey | undefined;
  }

  /** Every key item of a branch, newest first. */
  private async listStored(branchId: string): Promise<StoredKey[]> {
    const { items } = await this.queryItems<StoredKey>({
      IndexName: KEYS_BY_BRANCH_INDEX,
      KeyConditionExpression: 'branch_id = :branch',
      ExpressionAttributeValues: { ':branch': branchId },
      ScanIndexForward: false,
    });
    return items;
  }

  /** Writes a new key item under a fresh value, with its `created` entry; never overwrites one. */
  private async putNew(
    fields: Omit<ApiKeyRecord, 'start' | 'version'>,
    actor: string,
    now: Date,
    details?: Record<string, string>,
  ): Promise<{ key: string; keyHash: string; record: ApiKeyRecord; entry: ActivityEntry }> {
    const key = generateApiKey();
    const keyHash = hashApiKey(key);
    const record: ApiKeyRecord = { ...fields, start: apiKeyStart(key), version: 1 };
    const entry = entryOf({}, record, 'created', actor, now, details);
    const item: StoredKey = { ...record, key_hash: keyHash, pending_activity: entry };
    await this.run('PutItem', () =>
      this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: item,
          ConditionExpression: 'attribute_not_exists(key_hash)',
        }),
      ),
    );
    return { key, keyHash, record, entry };
  }

  /**
   * One key action as one conditional write on the version read: the change and its activity entry
   * (`pending_activity`) land together or not at all, and a concurrent action fails this one with
   * ConditionNotMetError. An entry left by an earlier action is finished first.
   */
  private async applyAction(
    stored: StoredKey,
    action: KeyAction,
    actor: string,
    now: Date,
    mutation: KeyMutation,
    details?: Record<string, string>,
  ): Promise<{ record: ApiKeyRecord; entry: ActivityEntry }> {
    await this.settle(stored);
    const version = (stored.version ?? 0) + 1;
    const after = { ...toRecord(stored), ...mutation.set, version } as ApiKeyRecord & Record<string, unknown>;
    for (const field of mutation.remove) delete after[field];
    const entry = entryOf(stored, after, action, actor, now, details);
    const set = { ...mutation.set, version, pending_activity: entry };
    const names: Record<string, string> = {};
    const values: Record<string, unknown> = {};
    const setParts = Object.entries(set).map(([field, value], i) => {
      names[`#s${i}`] = field;
      values[`:s${i}`] = value;
      return `#s${i} = :s${i}`;
    });
    const removeParts = mutation.remove.map((field, i) => {
      names[`#r${i}`] = field;
      return `#r${i}`;
    });
    names['#version'] = 'version';
    if (stored.version !== undefined) values[':expected'] = stored.version;
    const { Attributes } = await this.run('UpdateItem', () =>
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { key_hash: stored.key_hash },
          UpdateExpression: `SET ${setParts.join(', ')}${removeParts.length ? ` REMOVE ${removeParts.join(', ')}` : ''}`,
          ConditionExpression: `attribute_exists(key_hash) AND ${
            stored.version === undefined ? 'attribute_not_exists(#version)' : '#version = :expected'
          }`,
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
          ReturnValues: 'ALL_NEW',
        }),
      ),
    );
    return { record: toRecord(Attributes as StoredKey), entry };
  }

  /**
   * Finishes an entry an earlier action left on the item before this action replaces it, so it is
   * never lost: a failed copy or an unsent event fails this action (nothing written).
   */
  private async settle(stored: StoredKey): Promise<void> {
    const entry = stored.pending_activity;
    if (entry && !(await this.finish(entry, stored.key_hash, stored.start))) {
      throw new KeyEventNotSentError(`The key's previous action (${entry.action}) has no event sent yet; try again`);
    }
  }

  /**
   * Finishes the action's entry at once. The action has happened and its entry is on the item, so
   * a failure fails nothing: it leaves the entry to the next finisher (docs/decisions.md "Key
   * events") and is handed back, so the caller can say so.
   * @returns the entry, when it is still pending
   */
  private async publish(entry: ActivityEntry, keyHash: string, record: ApiKeyRecord): Promise<PendingEntry[]> {
    const attempt = await this.attemptFinish(entry, keyHash, record.start);
    return attempt.copied && attempt.sent ? [] : [{ entry, ...attempt }];
  }

  /**
   * Finishes an entry, as `attemptFinish`.
   * @returns whether the event was sent
   * @throws when the copy fails
   */
  private async finish(entry: ActivityEntry, keyHash: string, start: string): Promise<boolean> {
    const { copyError, sent } = await this.attemptFinish(entry, keyHash, start);
    if (copyError !== undefined) throw copyError;
    return sent;
  }

  /**
   * Copies an entry to the activity table (an idempotent put), sends its event (the entry's id is
   * the event's), then clears it from the item unless a later action replaced it. Without an
   * activity table, or with the copy failed or the event unsent, the entry stays pending.
   */
  private async attemptFinish(
    entry: ActivityEntry,
    keyHash: string,
    start: string,
  ): Promise<Omit<PendingEntry, 'entry'>> {
    // The event is sent even when the copy failed: a leak's event should not wait for the log.
    const copyFailure = await this.activity?.put(entry).then(
      () => undefined,
      (error: unknown) => ({ error }),
    );
    const sent = (await this.keyEvents.emit([keyEventOfAction(entry, start)])).length === 0;
    if (copyFailure) return { copied: false, copyError: copyFailure.error, sent };
    if (!this.activity || !sent) return { copied: this.activity !== undefined, sent };
    // Copied and sent: an entry left by a failed clear is only finished again, under the same event id.
    await this.clearPending(entry, keyHash).catch(() => undefined);
    return { copied: true, sent: true };
  }

  /** Removes a finished entry from its key item, unless a later action has replaced it. */
  private async clearPending(entry: ActivityEntry, keyHash: string): Promise<void> {
    await this.run('UpdateItem', () =>
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { key_hash: keyHash },
          UpdateExpression: 'REMOVE pending_activity',
          ConditionExpression: 'pending_activity.activity_id = :id',
          ExpressionAttributeValues: { ':id': entry.activity_id },
        }),
      ),
    );
  }

  private async deleteByHash(keyHash: string): Promise<void> {
    await this.run('DeleteItem', () =>
      this.client.send(new DeleteCommand({ TableName: this.tableName, Key: { key_hash: keyHash } })),
    );
  }
}
