/**
 * The hot-path key lookup: one strongly consistent GetItem by the key's hash, so a revocation
 * counts from the next request. The key actions read through it too (keys.ts).
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { ActivityEntry } from '../../domain/key-activity';
import type { ApiKeyRecord } from '../../domain/key-record';
import { DynamoRepository } from '../dynamodb';

/** The key item: the record, its hash, and the entry of its last action until it is copied out. */
export interface StoredKey extends ApiKeyRecord {
  key_hash: string;
  pending_activity?: ActivityEntry;
}

export const toRecord = ({ key_hash: _hash, pending_activity: _pending, ...record }: StoredKey): ApiKeyRecord => record;

export class KeyReader extends DynamoRepository {
  async getByHash(keyHash: string): Promise<ApiKeyRecord | undefined> {
    const stored = await this.getStored(keyHash);
    return stored ? toRecord(stored) : undefined;
  }

  /** The key item as stored, hash and pending entry included. */
  async getStored(keyHash: string): Promise<StoredKey | undefined> {
    const { Item } = await this.run('GetItem', () =>
      this.client.send(new GetCommand({ TableName: this.tableName, Key: { key_hash: keyHash }, ConsistentRead: true })),
    );
    return Item as StoredKey | undefined;
  }
}
