import { randomBytes } from 'node:crypto';
import { GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { apiKeyStart, generateApiKey, hashApiKey } from '../api-key';
import { ConditionNotMetError } from '../data-store-errors';
import { DynamoRepository } from '../dynamodb';
import type { Scope } from '../schemas';
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
  /** `N/s`, `N/min` or `N/h`; absent: the deployment's default (shared/rate-limit.ts). */
  rate_limit?: string;
}

interface StoredKey extends ApiKeyRecord {
  key_hash: string;
}

export interface CreateKeyInput {
  branchId: string;
  scopes: Scope[];
  name?: string;
  expiresAt?: Date;
  /** Already validated, in its written form (`formatRateLimit`). */
  rateLimit?: string;
  now?: Date;
}

export class KeyNotFoundError extends Error {
  override name = 'KeyNotFoundError';
}

const toRecord = ({ key_hash: _hash, ...record }: StoredKey): ApiKeyRecord => record;

export const newKeyId = (): string => `key_${randomBytes(12).toString('base64url')}`;

export class KeysRepository extends DynamoRepository {
  /** The hot-path lookup: strongly consistent, so a revocation counts from the next request. */
  async getByHash(keyHash: string): Promise<ApiKeyRecord | undefined> {
    const { Item } = await this.run('GetItem', (abortSignal) =>
      this.client.send(
        new GetCommand({ TableName: this.tableName, Key: { key_hash: keyHash }, ConsistentRead: true }),
        { abortSignal },
      ),
    );
    return Item ? toRecord(Item as StoredKey) : undefined;
  }

  /** Creates a key; the returned plaintext `key` is the only copy there will ever be. */
  async create(input: CreateKeyInput): Promise<{ key: string; record: ApiKeyRecord }> {
    const key = generateApiKey();
    const record: ApiKeyRecord = {
      key_id: newKeyId(),
      branch_id: input.branchId,
      name: input.name ?? 'API key',
      scopes: [...new Set(input.scopes)],
      start: apiKeyStart(key),
      created_at: (input.now ?? new Date()).toISOString(),
      ...(input.expiresAt ? { expires_at: input.expiresAt.toISOString() } : {}),
      ...(input.rateLimit ? { rate_limit: input.rateLimit } : {}),
    };
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
    const records: ApiKeyRecord[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.run('Query', (abortSignal) =>
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
      records.push(...((page.Items ?? []) as StoredKey[]).map(toRecord));
      startKey = page.LastEvaluatedKey;
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
    if (stored.revoked_at) return toRecord(stored);
    try {
      const { Attributes } = await this.run('UpdateItem', (abortSignal) =>
        this.client.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: { key_hash: stored.key_hash },
            UpdateExpression: 'SET revoked_at = :now',
            ConditionExpression: 'attribute_exists(key_hash) AND attribute_not_exists(revoked_at)',
            ExpressionAttributeValues: { ':now': now.toISOString() },
            ReturnValues: 'ALL_NEW',
          }),
          { abortSignal },
        ),
      );
      return toRecord(Attributes as StoredKey);
    } catch (error) {
      // Revoked concurrently by someone else: the key is revoked either way.
      if (error instanceof ConditionNotMetError) {
        return toRecord((await this.findStoredById(keyId)) ?? stored);
      }
      throw error;
    }
  }
}
