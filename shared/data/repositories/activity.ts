import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { ActivityEntry } from '../../domain/key-activity';
import { DynamoRepository } from '../dynamodb';
import { ACTIVITY_BY_KEY_INDEX } from '../tables';

export type { ActivityEntry };

export interface ActivityQuery {
  branchId: string;
  /** Only this key's actions. */
  keyId?: string;
  /** At most this many entries, newest first. */
  limit: number;
}

/** The table's sort key: time first, so a branch's (or a key's) entries read newest first. */
const sortKeyOf = (entry: ActivityEntry): string => `${entry.at}#${entry.activity_id}`;

const toEntry = (item: Record<string, unknown>): ActivityEntry => {
  const { sk: _sk, ...entry } = item;
  return entry as unknown as ActivityEntry;
};

/**
 * The key activity log. Entries are written by the keys repository (shared/data/repositories/keys.ts)
 * from the pending entry each key action leaves on the key item, so a put may be repeated: it
 * writes the same item under the same key.
 */
export class ActivityRepository extends DynamoRepository {
  async put(entry: ActivityEntry): Promise<void> {
    await this.run('PutItem', () =>
      this.client.send(new PutCommand({ TableName: this.tableName, Item: { ...entry, sk: sortKeyOf(entry) } })),
    );
  }

  /** The newest `limit` entries of a branch, or of one of its keys (entries of other branches excluded). */
  async list({ branchId, keyId, limit }: ActivityQuery): Promise<ActivityEntry[]> {
    const { items } = await this.queryItems(
      {
        ...(keyId === undefined
          ? { KeyConditionExpression: 'branch_id = :branch', ExpressionAttributeValues: { ':branch': branchId } }
          : {
              IndexName: ACTIVITY_BY_KEY_INDEX,
              KeyConditionExpression: 'key_id = :key',
              // Key ids are unique across branches; the filter only keeps a mistaken id from leaking.
              FilterExpression: 'branch_id = :branch',
              ExpressionAttributeValues: { ':key': keyId, ':branch': branchId },
            }),
        ScanIndexForward: false,
      },
      limit,
    );
    return items.map(toEntry);
  }
}
