import { randomBytes } from 'node:crypto';
import { ScanCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { keyState, msUntilExpiry, type KeyState } from '../../domain/key-state';
import type { KeyAction } from '../../domain/key-activity';
import { ConditionNotMetError } from '../data-store-errors';
import { KeyStore, type KeyMutation } from './key-store';
import {
  KeyActionRefusedError,
  KeyChangedError,
  KeyNotFoundError,
  KeyNotRollableError,
  type ApiKeyRecord,
  type KeySettingsChange,
} from '../../domain/key-record';
import {
  inheritedSettings,
  toRecord,
  UNKNOWN_ACTOR,
  type CreateKeyInput,
  type KeyActionResult,
  type KeyRef,
  type RolledKey,
  type RollKeyInput,
  type StoredKey,
} from './key-records';

export * from './key-records';

export const newKeyId = (): string => `key_${randomBytes(12).toString('base64url')}`;

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

export class KeysRepository extends KeyStore {
  /** The hot-path lookup: strongly consistent, so a revocation counts from the next request. */
  getByHash(keyHash: string): Promise<ApiKeyRecord | undefined> {
    return this.getStored(keyHash, (stored) => (stored ? toRecord(stored) : undefined));
  }

  /** Creates a key; the returned plaintext `key` is the only copy there will ever be. */
  async create(input: CreateKeyInput): Promise<{ key: string; record: ApiKeyRecord }> {
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
    await this.publish(entry, keyHash, record);
    return { key, record };
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
    const stored = found && (await this.getStored(found.key_hash));
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
      if (!mutation || isNoChange(stored, mutation)) return { record: toRecord(stored), changed: false };
      try {
        const { record, entry } = await this.applyAction(stored, action, ref.actor, now, mutation, details);
        await this.publish(entry, stored.key_hash, record);
        return { record, changed: true };
      } catch (error) {
        if (!(error instanceof ConditionNotMetError)) throw error;
        const current = await this.getStored(stored.key_hash);
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
   * Revokes a key from now on. Revoking a revoked key changes nothing and returns it as it is.
   * The caller checks the branch (the operator library does, before it calls this).
   * @param leak a secret-scanning report's facts (`url`, `source`): the entry is then `leaked`
   * @throws KeyNotFoundError when no key has this id
   */
  async revoke(
    keyId: string,
    now = new Date(),
    actor = UNKNOWN_ACTOR,
    leak?: Record<string, string>,
  ): Promise<ApiKeyRecord> {
    const { record } = await this.perform(
      { keyId, now, actor },
      leak ? 'leaked' : 'revoked',
      (stored, _state, at) =>
        stored.revoked_at === undefined ? { set: { revoked_at: at.toISOString() }, remove: [] } : undefined,
      leak,
    );
    return record;
  }

  /**
   * Rolls a key: a new key with the old one's settings (key-records.ts NOT_INHERITED), and the old
   * key ending at now + grace, never later than it already would. Only an active key can be rolled.
   *
   * Two writes and no transaction (the embedded DynamoDB has none; docs/decisions.md "Key
   * lifecycle"), ordered so a failure between them leaves nothing unusable: the new key is written
   * first (until the second write it is a key nobody holds), then the old key is shortened and
   * linked on the version that was read. When that second write fails, the old key is read again
   * (strongly consistent): linked to the new key means it did succeed; otherwise the new key (and
   * its pending `created` entry) is deleted and the error stands.
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
      await this.publish(entry, stored.key_hash, previous);
      await this.publish(created.entry, newHash, created.record);
      return { key: created.key, record: created.record, previous };
    } catch (error) {
      const current = await this.getStored(stored.key_hash).catch(() => undefined);
      if (current === undefined) throw error; // outcome unknown: leave the new key for the operator to see
      if (current.rolled_to === newId) {
        await this.publish(created.entry, newHash, created.record);
        return { key: created.key, record: created.record, previous: toRecord(current) };
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
   * Revokes the key whose value hashes to `keyHash` because a secret scanning report found it
   * (docs/decisions.md "Leaked keys"): one `leaked` action, with the report's url and source as its
   * details. `revoked` says whether this call revoked it (false: it already was); undefined when no
   * key has this hash.
   */
  async revokeLeaked(
    keyHash: string,
    report: { url: string; source: string },
    actor: string,
    now = new Date(),
  ): Promise<{ record: ApiKeyRecord; revoked: boolean } | undefined> {
    let stored = await this.getStored(keyHash);
    for (let attempt = 1; stored; attempt += 1) {
      if (stored.revoked_at !== undefined) return { record: toRecord(stored), revoked: false };
      try {
        const mutation = { set: { revoked_at: now.toISOString() }, remove: [] };
        const { record, entry } = await this.applyAction(stored, 'leaked', actor, now, mutation, report);
        await this.publish(entry, keyHash, record);
        return { record, revoked: true };
      } catch (error) {
        if (!(error instanceof ConditionNotMetError) || attempt >= MAX_ACTION_ATTEMPTS) throw error;
        stored = await this.getStored(keyHash);
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
    const records: ApiKeyRecord[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.run('Scan', () =>
        this.client.send(
          new ScanCommand({
            TableName: this.tableName,
            FilterExpression:
              'expires_at BETWEEN :now AND :until AND attribute_not_exists(revoked_at)' +
              ' AND (attribute_not_exists(expiring_event_for) OR expiring_event_for <> expires_at)',
            ExpressionAttributeValues: { ':now': now.toISOString(), ':until': until.toISOString() },
            ExclusiveStartKey: startKey,
          }),
        ),
      );
      records.push(...((page.Items ?? []) as StoredKey[]).map(toRecord));
      startKey = page.LastEvaluatedKey;
    } while (startKey);
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
}
