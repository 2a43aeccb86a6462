/**
 * The keys table's reads and writes below the key actions (shared/data/repositories/keys.ts): the
 * lookups, the one conditional write each action is, and the copy of its activity entry to the
 * activity table (docs/decisions.md "Key activity").
 */
import { DeleteCommand, GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { apiKeyStart, generateApiKey, hashApiKey } from '../../domain/api-key';
import { diffSettings, type ActivityEntry, type KeyAction } from '../../domain/key-activity';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DynamoRepository } from '../dynamodb';
import { KEYS_BY_BRANCH_INDEX, KEYS_BY_ID_INDEX } from '../tables';
import type { ActivityRepository } from './activity';
import type { KeyEventEmitter } from '../key-events';
import { keyEventOfAction } from '../../domain/key-events';
import { RECORDED_FIELDS, type ApiKeyRecord } from '../../domain/key-record';
import { toRecord, type StoredKey } from './key-records';

/** One action's change to a key item: attributes set and removed. */
export interface KeyMutation {
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

export class KeyStore extends DynamoRepository {
  /**
   * @param activity where action entries are copied; without it (the API functions) they stay on
   * the key item until the operator tooling next acts on the key or reads the activity.
   */
  constructor(
    client: DynamoDBDocumentClient,
    tableName: string,
    protected readonly activity?: ActivityRepository,
    /** Where each action's key event goes (docs/decisions.md "Key events"); sending never fails the action. */
    protected readonly keyEvents?: KeyEventEmitter,
  ) {
    super(client, tableName);
  }

  /** Strongly consistent, by the table key; `as` reads what was found (nothing, when nothing was). */
  protected getStored(keyHash: string): Promise<StoredKey | undefined>;
  protected getStored<R>(keyHash: string, as: (stored: StoredKey | undefined) => R): Promise<R>;
  protected getStored<R>(
    keyHash: string,
    as?: (stored: StoredKey | undefined) => R,
  ): Promise<StoredKey | undefined | R> {
    return this.run(
      'GetItem',
      () =>
        this.client.send(
          new GetCommand({ TableName: this.tableName, Key: { key_hash: keyHash }, ConsistentRead: true }),
        ),
      ({ Item }) => {
        const stored = Item as StoredKey | undefined;
        return as ? as(stored) : stored;
      },
    );
  }

  protected async findStoredById(keyId: string): Promise<StoredKey | undefined> {
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
  protected async listStored(branchId: string): Promise<StoredKey[]> {
    return this.queryItems<StoredKey>({
      IndexName: KEYS_BY_BRANCH_INDEX,
      KeyConditionExpression: 'branch_id = :branch',
      ExpressionAttributeValues: { ':branch': branchId },
      ScanIndexForward: false,
    });
  }

  /** Writes a new key item under a fresh value, with its `created` entry; never overwrites one. */
  protected async putNew(
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
   * One key action as one conditional write: the change and its activity entry (kept on the item
   * as `pending_activity`) land together or not at all, on the version that was read, so a
   * concurrent action makes this one fail with ConditionNotMetError instead of overwriting it.
   * An entry left pending by an earlier action is copied out first, so none is ever overwritten.
   */
  protected async applyAction(
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

  /** Copies an entry left on a key item to the activity table; a failure fails the caller. */
  protected async settle(stored: StoredKey): Promise<void> {
    if (stored.pending_activity && this.activity) await this.activity.put(stored.pending_activity);
  }

  /**
   * Sends the action's key event, then copies its entry to the activity table and clears it from the key item. Best
   * effort: the action has happened and its entry is on the item, so a failure here only delays
   * the copy to the next action on the key or the next activity read (`flushActivity`).
   */
  protected async publish(entry: ActivityEntry, keyHash: string, record: ApiKeyRecord): Promise<void> {
    await this.keyEvents?.emit([keyEventOfAction(entry, record.start)]);
    if (!this.activity) return;
    try {
      await this.activity.put(entry);
      await this.clearPending(entry, keyHash);
    } catch {
      // Left pending on the key item; copied later (see above).
    }
  }

  /** Removes a copied entry from its key item, unless a later action has replaced it. */
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

  /**
   * Copies every entry still pending on a branch's keys, so the activity read next agrees with
   * the keys; a failed copy fails the read. Returns how many there were.
   */
  async flushActivity(branchId: string): Promise<number> {
    if (!this.activity) return 0;
    const pending = (await this.listStored(branchId)).filter((stored) => stored.pending_activity);
    for (const { pending_activity: entry, key_hash: keyHash } of pending) {
      await this.activity.put(entry!);
      await this.clearPending(entry!, keyHash).catch(() => undefined); // copied; clearing is tidiness
    }
    return pending.length;
  }

  protected async deleteByHash(keyHash: string): Promise<void> {
    await this.run('DeleteItem', () =>
      this.client.send(new DeleteCommand({ TableName: this.tableName, Key: { key_hash: keyHash } })),
    );
  }
}
