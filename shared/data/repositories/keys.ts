/**
 * Key commands on the keys table: every key action is one conditional write on the version read,
 * which also adds the action's entry to the key item's outbox, whatever earlier entries still wait
 * there; the entries are finished right after (key-outbox.ts; docs/decisions.md "Key activity",
 * "Key events"). The hot-path lookup is KeyReader (key-reader.ts).
 */
import { randomBytes } from 'node:crypto';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { apiKeyStart, generateApiKey, hashApiKey } from '../../domain/api-key';
import { actionEntry, type KeyAction } from '../../domain/key-activity';
import {
  KeyActionRefusedError,
  KeyChangedError,
  KeyNotFoundError,
  KeyNotRollableError,
  inheritedSettings,
  type ApiKeyRecord,
  type KeySettingsChange,
} from '../../domain/key-record';
import { keyState, msUntilExpiry, type KeyState } from '../../domain/key-state';
import type { Scope } from '../../domain/schemas';
import { ConditionNotMetError } from '../data-store-errors';
import { DynamoRepository } from '../dynamodb';
import { noKeyEvents, type KeyEventEmitter } from '../key-events';
import type { ActivityRepository } from './activity';
import { KeyOutbox, outboxAppend, type PendingEntry } from './key-outbox';
import { KeyReader, toRecord, type StoredKey } from './key-reader';

export { toRecord, type StoredKey } from './key-reader';
export type { PendingEntry } from './key-outbox';

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
  /** The entries of both keys still waiting (the old key's `rolled`, the new key's `created`, any earlier). */
  pending: PendingEntry[];
}

/** What an action did: the key afterwards, false when there was nothing to change, and the key's entries still waiting. */
export interface KeyActionResult {
  record: ApiKeyRecord;
  changed: boolean;
  pending: PendingEntry[];
}

/** Actor of actions taken without one (the tests' fixtures, keys made before activity existed). */
export const UNKNOWN_ACTOR = 'unknown';

/** One action's change to a key item: attributes set and removed. */
interface KeyMutation {
  set: Record<string, unknown>;
  remove: readonly string[];
}

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

const revocation: Plan = (stored, _state, now) =>
  stored.revoked_at === undefined ? { set: { revoked_at: now.toISOString() }, remove: [] } : undefined;

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

/** One action, as `perform` runs it. */
interface Action {
  action: KeyAction;
  actor: string;
  now: Date;
  plan: Plan;
  details?: Record<string, string>;
}

export class KeysRepository extends DynamoRepository {
  private readonly reader = new KeyReader(this.client, this.tableName);
  /** The entries this repository's actions leave; also what the sweep, the stream and activity reads finish. */
  readonly outbox: KeyOutbox;

  /**
   * @param activity where action entries are copied; without it they wait on the key item for a
   * finisher that has it (an activity read, a sweep, the stream).
   * @param keyEvents where each action's key event goes; sending never fails the action.
   */
  constructor(
    client: DynamoDBDocumentClient,
    tableName: string,
    activity?: ActivityRepository,
    keyEvents: KeyEventEmitter = noKeyEvents,
  ) {
    super(client, tableName);
    this.outbox = new KeyOutbox(client, tableName, activity, keyEvents);
  }

  /** The key whose value hashes to `keyHash`, read strongly consistent. */
  getByHash(keyHash: string): Promise<ApiKeyRecord | undefined> {
    return this.reader.getByHash(keyHash);
  }

  /** Creates a key; the returned plaintext `key` is the only copy there will ever be. */
  async create(input: CreateKeyInput): Promise<{ key: string; record: ApiKeyRecord; pending: PendingEntry[] }> {
    const now = input.now ?? new Date();
    const { key, item } = await this.putNew(
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
    return { key, record: toRecord(item), pending: await this.outbox.finish(item) };
  }

  /** Every key of a branch, newest first. */
  async listByBranch(branchId: string): Promise<ApiKeyRecord[]> {
    return (await this.reader.listOfBranch(branchId)).map(toRecord);
  }

  async getById(keyId: string): Promise<ApiKeyRecord | undefined> {
    const stored = await this.reader.findById(keyId);
    return stored ? toRecord(stored) : undefined;
  }

  /**
   * The key (of the branch, when one is given), read strongly consistent; another branch's key is
   * as unknown as none.
   */
  private async requireStored({ keyId, branchId }: { keyId: string; branchId?: string }): Promise<StoredKey> {
    const found = await this.reader.findById(keyId);
    const stored = found && (await this.reader.getStored(found.key_hash));
    if (!stored || (branchId !== undefined && stored.branch_id !== branchId)) {
      throw new KeyNotFoundError(`No key with id ${keyId}`);
    }
    return stored;
  }

  /**
   * Runs one action: plans it on the key as read and writes it on that version; when another
   * action got there first, plans again on the key as it is now (which may then need no change).
   * Entries still waiting on the key never stop it.
   * @throws KeyNotFoundError, KeyActionRefusedError, KeyChangedError (lost the race every time)
   */
  private async perform(stored: StoredKey, { action, actor, now, plan, details }: Action): Promise<KeyActionResult> {
    for (let attempt = 1; ; attempt += 1) {
      const mutation = plan(stored, keyState(stored, now), now);
      if (!mutation || isNoChange(stored, mutation)) return { record: toRecord(stored), changed: false, pending: [] };
      try {
        const written = await this.applyAction(stored, action, actor, now, mutation, details);
        return { record: toRecord(written), changed: true, pending: await this.outbox.finish(written) };
      } catch (error) {
        if (!(error instanceof ConditionNotMetError)) throw error;
        const current = await this.reader.getStored(stored.key_hash);
        if (!current) throw new KeyNotFoundError(`No key with id ${stored.key_id}`);
        if (attempt >= MAX_ACTION_ATTEMPTS) throw new KeyChangedError(`Key ${stored.key_id} kept changing; try again`);
        stored = current;
      }
    }
  }

  /** Runs an action on a key of the branch, as `ref`'s actor. */
  private async act(ref: KeyRef, action: KeyAction, plan: Plan): Promise<KeyActionResult> {
    return this.perform(await this.requireStored(ref), { action, actor: ref.actor, now: ref.now ?? new Date(), plan });
  }

  /** Changes settings of a live (active or disabled) key; unchanged settings write nothing. */
  async update(ref: KeyRef, change: KeySettingsChange): Promise<KeyActionResult> {
    return this.act(ref, 'updated', (stored, state) => {
      refuseUnless('updated', ['active', 'disabled'])(stored, state);
      return mutationOf(change);
    });
  }

  /** Disables a key until it is enabled: 401 disabled_api_key meanwhile. Disabling twice changes nothing. */
  async disable(ref: KeyRef): Promise<KeyActionResult> {
    return this.act(ref, 'disabled', (stored, state, now) => {
      if (state === 'disabled') return undefined;
      refuseUnless('disabled', ['active', 'grace'])(stored, state);
      return { set: { disabled_at: now.toISOString() }, remove: [] };
    });
  }

  /** Enables a disabled key; an enabled one is left as it is. Revoked and expired keys are refused. */
  async enable(ref: KeyRef): Promise<KeyActionResult> {
    return this.act(ref, 'enabled', (stored, state) => {
      refuseUnless('enabled', ['active', 'grace', 'disabled'])(stored, state);
      return stored.disabled_at === undefined ? undefined : { set: {}, remove: ['disabled_at'] };
    });
  }

  /**
   * Revokes a key from now on; revoking a revoked key changes nothing. The caller checks the branch.
   * @throws KeyNotFoundError when no key has this id
   */
  async revoke(keyId: string, now = new Date(), actor = UNKNOWN_ACTOR): Promise<KeyActionResult> {
    return this.perform(await this.requireStored({ keyId }), { action: 'revoked', actor, now, plan: revocation });
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
    const stored = await this.reader.getStored(keyHash);
    if (!stored) return undefined;
    const { record, changed, pending } = await this.perform(stored, {
      action: 'leaked',
      actor,
      now,
      plan: revocation,
      details: report,
    });
    return { record, revoked: changed, pending };
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
        ...inheritedSettings(toRecord(stored)),
        key_id: newKeyId(),
        created_at: now.toISOString(),
        rolled_from: keyId,
      },
      actor,
      now,
      { rolled_from: keyId },
    );
    const newId = created.item.key_id;
    const rolled = (previous: ApiKeyRecord, pending: PendingEntry[]) => ({
      key: created.key,
      record: toRecord(created.item),
      previous,
      pending,
    });
    try {
      const mutation = { set: { expires_at: endsAt, rolled_to: newId }, remove: [] };
      const linked = await this.applyAction(stored, 'rolled', actor, now, mutation, { rolled_to: newId });
      const pending = await this.outbox.finish(linked);
      return rolled(toRecord(linked), [...pending, ...(await this.outbox.finish(created.item))]);
    } catch (error) {
      const current = await this.reader.getStored(stored.key_hash).catch(() => undefined);
      if (current === undefined) throw error; // outcome unknown: leave the new key for the operator to see
      if (current.rolled_to === newId) return rolled(toRecord(current), await this.outbox.finish(created.item));
      await this.deleteItem({ Key: { key_hash: created.item.key_hash } }).catch(() => undefined);
      if (error instanceof ConditionNotMetError) {
        const stateNow = keyState(current, now);
        if (stateNow === 'active') throw new KeyChangedError(`Key ${keyId} changed during the roll; try again`);
        throw new KeyNotRollableError(keyId, stateNow, current.rolled_to);
      }
      throw error;
    }
  }

  /** Writes a new key item under a fresh value, its `created` entry in its outbox; never overwrites one. */
  private async putNew(
    fields: Omit<ApiKeyRecord, 'start' | 'version'>,
    actor: string,
    now: Date,
    details?: Record<string, string>,
  ): Promise<{ key: string; item: StoredKey }> {
    const key = generateApiKey();
    const record: ApiKeyRecord = { ...fields, start: apiKeyStart(key), version: 1 };
    const item: StoredKey = {
      ...record,
      key_hash: hashApiKey(key),
      outbox: [actionEntry({}, record, 'created', actor, now, details)],
    };
    await this.putItem({ Item: item, ConditionExpression: 'attribute_not_exists(key_hash)' });
    return { key, item };
  }

  /**
   * One key action as one conditional write on the version read: the change and its entry, added
   * to the outbox, land together or not at all, and a concurrent action fails this one with
   * ConditionNotMetError. Past the outbox's bound the oldest entries are folded, after being put in
   * the activity log.
   * @returns the key item as written
   */
  private async applyAction(
    stored: StoredKey,
    action: KeyAction,
    actor: string,
    now: Date,
    mutation: KeyMutation,
    details?: Record<string, string>,
  ): Promise<StoredKey> {
    const version = (stored.version ?? 0) + 1;
    const after = { ...toRecord(stored), ...mutation.set, version } as ApiKeyRecord & Record<string, unknown>;
    for (const field of mutation.remove) delete after[field];
    const append = outboxAppend(stored, actionEntry(stored, after, action, actor, now, details));
    if (append.folded.length > 0) await this.outbox.keepInLog(append.folded);
    const names: Record<string, string> = { ...append.names, '#version': 'version' };
    const values: Record<string, unknown> = { ...append.values };
    const setParts = Object.entries({ ...mutation.set, version }).map(([field, value], i) => {
      names[`#s${i}`] = field;
      values[`:s${i}`] = value;
      return `#s${i} = :s${i}`;
    });
    const removeParts = mutation.remove.map((field, i) => {
      names[`#r${i}`] = field;
      return `#r${i}`;
    });
    if (stored.version !== undefined) values[':expected'] = stored.version;
    const conditions = [
      'attribute_exists(key_hash)',
      stored.version === undefined ? 'attribute_not_exists(#version)' : '#version = :expected',
      ...(append.condition ? [append.condition] : []),
    ];
    const { Attributes } = await this.updateItem({
      Key: { key_hash: stored.key_hash },
      UpdateExpression: `SET ${[...setParts, append.set].join(', ')}${removeParts.length ? ` REMOVE ${removeParts.join(', ')}` : ''}`,
      ConditionExpression: conditions.join(' AND '),
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
      ReturnValues: 'ALL_NEW',
    });
    return Attributes as StoredKey;
  }
}
