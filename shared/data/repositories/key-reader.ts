/**
 * Reads of the keys table. The hot-path lookup is one strongly consistent GetItem by the key's
 * hash, so a revocation counts from the next request; the key actions (keys.ts), their outbox
 * (key-outbox.ts) and the expiry claims (key-expiry-claims.ts) also find items through the indexes.
 */
import { BatchGetCommand, GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { ActivityEntry } from '../../domain/key-activity';
import type { ApiKeyRecord } from '../../domain/key-record';
import { DynamoRepository } from '../dynamodb';
import { KEYS_BY_BRANCH_INDEX, KEYS_BY_ID_INDEX } from '../tables';

/** The key item: the record, its hash, and the entries of its actions not finished yet, oldest first. */
export interface StoredKey extends ApiKeyRecord {
  key_hash: string;
  outbox?: ActivityEntry[];
}

export const toRecord = ({ key_hash: _hash, outbox: _outbox, ...record }: StoredKey): ApiKeyRecord => record;

export class KeyReader extends DynamoRepository {
  async getByHash(keyHash: string): Promise<ApiKeyRecord | undefined> {
    const stored = await this.getStored(keyHash);
    return stored ? toRecord(stored) : undefined;
  }

  /** The key item as stored, hash and outbox included. */
  async getStored(keyHash: string): Promise<StoredKey | undefined> {
    const { Item } = await this.run('GetItem', () =>
      this.client.send(new GetCommand({ TableName: this.tableName, Key: { key_hash: keyHash }, ConsistentRead: true })),
    );
    return Item as StoredKey | undefined;
  }

  /** The key item with this id, from the by-id index (eventually consistent: read it again by hash to act). */
  async findById(keyId: string): Promise<StoredKey | undefined> {
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
  async listOfBranch(branchId: string): Promise<StoredKey[]> {
    const { items } = await this.queryItems<StoredKey>({
      IndexName: KEYS_BY_BRANCH_INDEX,
      KeyConditionExpression: 'branch_id = :branch',
      ExpressionAttributeValues: { ':branch': branchId },
      ScanIndexForward: false,
    });
    return items;
  }

  /**
   * Whether each of up to 100 distinct hashes is a key, and revoked: one strongly consistent
   * BatchGetItem, not retried; the hashes DynamoDB left unprocessed are handed back.
   */
  async getStoredBatch(
    keyHashes: readonly string[],
  ): Promise<{ found: Map<string, Pick<StoredKey, 'key_hash' | 'revoked_at'>>; unprocessed: string[] }> {
    const { Responses, UnprocessedKeys } = await this.run('BatchGetItem', () =>
      this.client.send(
        new BatchGetCommand({
          RequestItems: {
            [this.tableName]: {
              Keys: keyHashes.map((key_hash) => ({ key_hash })),
              ConsistentRead: true,
              ProjectionExpression: 'key_hash, revoked_at',
            },
          },
        }),
      ),
    );
    const items = (Responses?.[this.tableName] ?? []) as Pick<StoredKey, 'key_hash' | 'revoked_at'>[];
    return {
      found: new Map(items.map((item) => [item.key_hash, item])),
      unprocessed: (UnprocessedKeys?.[this.tableName]?.Keys ?? []).map((key) => String(key.key_hash)),
    };
  }
}
