/**
 * Reads of the keys table. The hot-path lookup is one strongly consistent GetItem by the key's
 * hash, so a revocation counts from the next request; the key actions (keys.ts), their outbox
 * (key-outbox.ts) and the expiry claims (key-expiry-claims.ts) also find items through the indexes.
 */
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
    const { Item } = await this.getItem({ Key: { key_hash: keyHash }, ConsistentRead: true });
    return Item as StoredKey | undefined;
  }

  /** The key item with this id, from the by-id index (eventually consistent: read it again by hash to act). */
  async findById(keyId: string): Promise<StoredKey | undefined> {
    const { items } = await this.queryItems<StoredKey>(
      {
        IndexName: KEYS_BY_ID_INDEX,
        KeyConditionExpression: 'key_id = :id',
        ExpressionAttributeValues: { ':id': keyId },
      },
      1,
    );
    return items[0];
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
    const { items, unprocessed } = await this.batchGet<StoredKey>(
      keyHashes.map((key_hash) => ({ key_hash })),
      { projection: 'key_hash, revoked_at', consistent: true, once: true },
    );
    return {
      found: new Map(items.map((item) => [item.key_hash, item])),
      unprocessed: unprocessed.map((key) => String(key.key_hash)),
    };
  }
}
