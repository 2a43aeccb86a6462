import { randomBytes } from 'node:crypto';
import { DeleteCommand, GetCommand, PutCommand, QueryCommand, ScanCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { apiKeyStart, generateApiKey, hashApiKey } from '../../domain/api-key';
import { ConditionNotMetError } from '../data-store-errors';
import { DynamoRepository } from '../dynamodb';
import type { Scope } from '../../domain/schemas';
import { KEYS_BY_BRANCH_INDEX, KEYS_BY_ID_INDEX } from '../tables';

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
  /** Canonical CIDR blocks the key may be used from (shared/domain/cidr.ts); absent: anywhere. */
  allowed_ips?: string[];
  /** The key this one replaced (`keys roll`). */
  rolled_from?: string;
  /** The key that replaced this one; this key then expires at the end of the grace period. */
  rolled_to?: string;
  /** `N/s`, `N/min` or `N/h`; absent: the deployment's default (shared/domain/rate-limit.ts). */
  rate_limit?: string;
  /** The expiry a `Key Expiring` event was sent for (so it is sent once per expiry). */
  expiring_event_for?: string;
}

interface StoredKey extends ApiKeyRecord {
  key_hash: string;
}

export interface CreateKeyInput {
  branchId: string;
  scopes: Scope[];
  name?: string;
  expiresAt?: Date;
  /** Canonical CIDR entries (shared/domain/cidr.ts parseAllowlist). */
  allowedIps?: string[];
  /** Already validated, in its written form (`formatRateLimit`). */
  rateLimit?: string;
  now?: Date;
}

export interface RollKeyInput {
  keyId: string;
  /** The key must belong to this branch; a key of another branch is as unknown as a missing one. */
  branchId: string;
  /** How long the old key keeps working; it never expires later than it already would. */
  graceMs: number;
  now?: Date;
}

export interface RolledKey {
  /** The new key's value: the only copy there will ever be. */
  key: string;
  record: ApiKeyRecord;
  /** The old key as it is now: `rolled_to` set, `expires_at` at the end of the grace period. */
  previous: ApiKeyRecord;
}

/** Why a key cannot be rolled. */
export type NotRollableReason = 'revoked' | 'expired' | 'rolled';

export class KeyNotRollableError extends Error {
  override name = 'KeyNotRollableError';
  constructor(
    readonly keyId: string,
    readonly reason: NotRollableReason,
    readonly rolledTo?: string,
  ) {
    super(`Key ${keyId} cannot be rolled: ${reason}`);
  }
}

export class KeyNotFoundError extends Error {
  override name = 'KeyNotFoundError';
}

const toRecord = ({ key_hash: _hash, ...record }: StoredKey): ApiKeyRecord => record;

/**
 * What a rolled key does not inherit: its identity, its links and its own times. Everything else
 * (branch, name, scopes, IP allowlist, expiry, rate limit, and any attribute added later) is
 * copied, so a new key setting can't be lost in a roll.
 */
const NOT_INHERITED = new Set<string>([
  'key_hash',
  'key_id',
  'start',
  'created_at',
  'revoked_at',
  'rolled_from',
  'rolled_to',
  'expiring_event_for',
]);
const inheritedSettings = (stored: StoredKey): Record<string, unknown> =>
  Object.fromEntries(Object.entries(stored).filter(([name]) => !NOT_INHERITED.has(name)));

/** Why an existing key can't be rolled at `now`, or undefined when it can. */
const notRollable = (stored: StoredKey, now: Date): NotRollableReason | undefined => {
  if (stored.revoked_at !== undefined) return 'revoked';
  if (stored.rolled_to !== undefined) return 'rolled';
  if (stored.expires_at !== undefined && !(Date.parse(stored.expires_at) > now.getTime())) return 'expired';
  return undefined;
};

export const newKeyId = (): string => `key_${randomBytes(12).toString('base64url')}`;

export class KeysRepository extends DynamoRepository {
  /** The hot-path lookup: strongly consistent, so a revocation counts from the next request. */
  async getByHash(keyHash: string): Promise<ApiKeyRecord | undefined> {
    const stored = await this.getStored(keyHash);
    return stored ? toRecord(stored) : undefined;
  }

  private async getStored(keyHash: string): Promise<StoredKey | undefined> {
    const { Item } = await this.run('GetItem', (abortSignal) =>
      this.client.send(
        new GetCommand({ TableName: this.tableName, Key: { key_hash: keyHash }, ConsistentRead: true }),
        { abortSignal },
      ),
    );
    return Item as StoredKey | undefined;
  }

  /** Creates a key; the returned plaintext `key` is the only copy there will ever be. */
  async create(input: CreateKeyInput): Promise<{ key: string; record: ApiKeyRecord }> {
    return this.putNew({
      key_id: newKeyId(),
      branch_id: input.branchId,
      name: input.name ?? 'API key',
      scopes: [...new Set(input.scopes)],
      created_at: (input.now ?? new Date()).toISOString(),
      ...(input.expiresAt ? { expires_at: input.expiresAt.toISOString() } : {}),
      ...(input.rateLimit ? { rate_limit: input.rateLimit } : {}),
      ...(input.allowedIps && input.allowedIps.length > 0 ? { allowed_ips: [...input.allowedIps] } : {}),
    });
  }

  /** Writes a new key item under a fresh value; never overwrites one. */
  private async putNew(fields: Omit<ApiKeyRecord, 'start'>): Promise<{ key: string; record: ApiKeyRecord }> {
    const key = generateApiKey();
    const record: ApiKeyRecord = { ...fields, start: apiKeyStart(key) };
    const item: StoredKey = { ...record, key_hash: hashApiKey(key) };
    await this.run('PutItem', (abortSignal) =>
      this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: item,
          ConditionExpression: 'attribute_not_exists(key_hash)',
        }),
        { abortSignal },
      ),
    );
    return { key, record };
  }

  /** Every key of a branch, newest first. */
  async listByBranch(branchId: string): Promise<ApiKeyRecord[]> {
    return this.allPages('Query', (startKey, abortSignal) =>
      this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: KEYS_BY_BRANCH_INDEX,
          KeyConditionExpression: 'branch_id = :branch',
          ExpressionAttributeValues: { ':branch': branchId },
          ScanIndexForward: false,
          ExclusiveStartKey: startKey,
        }),
        { abortSignal },
      ),
    );
  }

  /** Every record of a paged Query or Scan. */
  private async allPages(
    operation: 'Query' | 'Scan',
    page: (
      startKey: Record<string, unknown> | undefined,
      abortSignal: AbortSignal,
    ) => Promise<{ Items?: Record<string, unknown>[]; LastEvaluatedKey?: Record<string, unknown> }>,
  ): Promise<ApiKeyRecord[]> {
    const records: ApiKeyRecord[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const result = await this.run(operation, (abortSignal) => page(startKey, abortSignal));
      records.push(...((result.Items ?? []) as unknown as StoredKey[]).map(toRecord));
      startKey = result.LastEvaluatedKey;
    } while (startKey);
    return records;
  }

  async getById(keyId: string): Promise<ApiKeyRecord | undefined> {
    const stored = await this.findStoredById(keyId);
    return stored ? toRecord(stored) : undefined;
  }

  private async findStoredById(keyId: string): Promise<StoredKey | undefined> {
    const { Items } = await this.run('Query', (abortSignal) =>
      this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: KEYS_BY_ID_INDEX,
          KeyConditionExpression: 'key_id = :id',
          ExpressionAttributeValues: { ':id': keyId },
          Limit: 1,
        }),
        { abortSignal },
      ),
    );
    return Items?.[0] as StoredKey | undefined;
  }

  /**
   * Revokes a key from now on. Revoking a revoked key changes nothing and returns it as it is.
   * @throws KeyNotFoundError when no key has this id
   */
  async revoke(keyId: string, now = new Date()): Promise<ApiKeyRecord> {
    const stored = await this.findStoredById(keyId);
    if (!stored) throw new KeyNotFoundError(`No key with id ${keyId}`);
    return (await this.revokeStored(stored, now)).record;
  }

  /**
   * Revokes a key found by the hash of its value (a leak report, docs/decisions.md "Leaked keys").
   * `revoked` says whether this call revoked it; undefined when no key has this hash.
   */
  async revokeByHash(
    keyHash: string,
    now = new Date(),
  ): Promise<{ record: ApiKeyRecord; revoked: boolean } | undefined> {
    const stored = await this.getStored(keyHash);
    return stored ? this.revokeStored(stored, now) : undefined;
  }

  private async revokeStored(stored: StoredKey, now: Date): Promise<{ record: ApiKeyRecord; revoked: boolean }> {
    if (stored.revoked_at) return { record: toRecord(stored), revoked: false };
    try {
      const record = await this.updateStored(
        stored.key_hash,
        'SET revoked_at = :now',
        'attribute_exists(key_hash) AND attribute_not_exists(revoked_at)',
        { ':now': now.toISOString() },
      );
      return { record, revoked: true };
    } catch (error) {
      // Revoked concurrently by someone else: the key is revoked either way.
      if (error instanceof ConditionNotMetError) {
        return { record: toRecord((await this.getStored(stored.key_hash)) ?? stored), revoked: false };
      }
      throw error;
    }
  }

  /**
   * Rolls a key: a new key with the old one's settings (see NOT_INHERITED), and the old key ending
   * at now + grace, never later than it already would. Rolled, revoked and expired keys are refused.
   *
   * Two writes and no transaction (the embedded DynamoDB has none; docs/decisions.md "Key
   * lifecycle"), ordered so a failure between them leaves nothing unusable: the new key is written
   * first (until the second write it is a key nobody holds), then the old key is shortened and
   * linked under the condition that it is still rollable. When that second write fails, the old key
   * is read again (strongly consistent): linked to the new key means it did succeed; otherwise the new key is deleted and
   * the error stands (a roll racing a revoke or another roll loses cleanly).
   * @throws KeyNotFoundError when no key of this branch has this id
   * @throws KeyNotRollableError when the key is revoked, expired or already rolled
   */
  async roll({ keyId, branchId, graceMs, now = new Date() }: RollKeyInput): Promise<RolledKey> {
    const stored = await this.findStoredById(keyId);
    if (!stored || stored.branch_id !== branchId) throw new KeyNotFoundError(`No key with id ${keyId}`);
    const reason = notRollable(stored, now);
    if (reason) throw new KeyNotRollableError(keyId, reason, stored.rolled_to);
    const graceEnd = now.getTime() + graceMs;
    const endsAt = new Date(
      stored.expires_at === undefined ? graceEnd : Math.min(graceEnd, Date.parse(stored.expires_at)),
    ).toISOString();
    const created = await this.putNew({
      ...(inheritedSettings(stored) as Pick<ApiKeyRecord, 'branch_id' | 'name' | 'scopes'>),
      key_id: newKeyId(),
      created_at: now.toISOString(),
      rolled_from: keyId,
    });
    try {
      const previous = await this.updateStored(
        stored.key_hash,
        'SET expires_at = :ends, rolled_to = :new',
        // Stored times are all Date#toISOString, so they compare as strings.
        'attribute_exists(key_hash) AND attribute_not_exists(revoked_at) AND attribute_not_exists(rolled_to)' +
          ' AND (attribute_not_exists(expires_at) OR expires_at > :now)',
        { ':ends': endsAt, ':new': created.record.key_id, ':now': now.toISOString() },
      );
      return { ...created, previous };
    } catch (error) {
      // Strongly consistent, by the table key: the by-key-id index could still show the old state.
      const current = await this.getStored(stored.key_hash).catch(() => undefined);
      if (current === undefined) throw error; // outcome unknown: leave the new key for the operator to see
      if (current.rolled_to === created.record.key_id) return { ...created, previous: toRecord(current) };
      await this.deleteByHash(hashApiKey(created.key)).catch(() => undefined);
      if (error instanceof ConditionNotMetError) {
        throw new KeyNotRollableError(keyId, notRollable(current, now) ?? 'rolled', current.rolled_to);
      }
      throw error;
    }
  }

  /** One conditional update of a stored key; the key as it is afterwards. */
  private async updateStored(
    keyHash: string,
    update: string,
    condition: string,
    values: Record<string, unknown>,
  ): Promise<ApiKeyRecord> {
    const { Attributes } = await this.run('UpdateItem', (abortSignal) =>
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { key_hash: keyHash },
          UpdateExpression: update,
          ConditionExpression: condition,
          ExpressionAttributeValues: values,
          ReturnValues: 'ALL_NEW',
        }),
        { abortSignal },
      ),
    );
    return toRecord(Attributes as StoredKey);
  }

  /**
   * Keys not revoked whose expiry falls between `now` and `until` and whose `Key Expiring` event
   * has not been claimed for that expiry. A Scan: run by the daily scheduled function only, never
   * on a request path (docs/decisions.md "Key events").
   */
  async listExpiring(now: Date, until: Date): Promise<ApiKeyRecord[]> {
    return this.allPages('Scan', (startKey, abortSignal) =>
      this.client.send(
        new ScanCommand({
          TableName: this.tableName,
          FilterExpression:
            'expires_at BETWEEN :now AND :until AND attribute_not_exists(revoked_at)' +
            ' AND (attribute_not_exists(expiring_event_for) OR expiring_event_for <> expires_at)',
          ExpressionAttributeValues: { ':now': now.toISOString(), ':until': until.toISOString() },
          ExclusiveStartKey: startKey,
        }),
        { abortSignal },
      ),
    );
  }

  /**
   * Claims the `Key Expiring` event of a key's current expiry: true for the one caller that gets
   * to send it, false when it was claimed already or the expiry changed (an edited expiry gets its own).
   */
  async claimExpiringEvent(keyId: string, expiresAt: string): Promise<boolean> {
    const stored = await this.findStoredById(keyId);
    if (!stored || stored.expires_at !== expiresAt || stored.expiring_event_for === expiresAt) return false;
    try {
      await this.updateStored(
        stored.key_hash,
        'SET expiring_event_for = :expires',
        'expires_at = :expires AND (attribute_not_exists(expiring_event_for) OR expiring_event_for <> :expires)',
        { ':expires': expiresAt },
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionNotMetError) return false;
      throw error;
    }
  }

  private async deleteByHash(keyHash: string): Promise<void> {
    await this.run('DeleteItem', (abortSignal) =>
      this.client.send(new DeleteCommand({ TableName: this.tableName, Key: { key_hash: keyHash } }), { abortSignal }),
    );
  }
}
