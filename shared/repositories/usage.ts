import { PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoRepository } from '../dynamodb';
import { USAGE_BY_KEY_INDEX } from '../tables';

/** One call made with a known key (DESIGN "Usage records"). */
export interface UsageRecord {
  key_id: string;
  branch_id: string;
  method: string;
  /** The path as requested, stage prefix included. */
  path: string;
  /** The route template, e.g. `GET /v1/payment-providers/{id}`. */
  route: string;
  status: number;
  response_time_ms: number;
  timestamp: string;
  request_id: string;
}

export interface UsageQuery {
  branchId: string;
  keyId?: string;
  /** Only records at or after this time. */
  since?: Date;
  limit: number;
  /** From a previous page's `nextCursor`. */
  cursor?: string;
}

export interface UsagePage {
  records: UsageRecord[];
  nextCursor?: string;
}

const DAY_SECONDS = 86_400;

const encodeCursor = (key: Record<string, unknown>): string => Buffer.from(JSON.stringify(key)).toString('base64url');
const decodeCursor = (cursor: string): Record<string, unknown> => {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  } catch {
    // fall through
  }
  throw new InvalidUsageCursorError('The usage cursor is not valid');
};

export class InvalidUsageCursorError extends Error {
  override name = 'InvalidUsageCursorError';
}

const toRecord = (item: Record<string, unknown>): UsageRecord => {
  const { sk: _sk, expires_at_epoch: _ttl, ...record } = item;
  return record as unknown as UsageRecord;
};

const toItem = (record: UsageRecord, retentionDays: number) => ({
  ...record,
  sk: `${record.timestamp}#${record.request_id}`,
  expires_at_epoch: Math.floor(Date.parse(record.timestamp) / 1000) + retentionDays * DAY_SECONDS,
});

export class UsageRepository extends DynamoRepository {
  /** Stores one record; DynamoDB TTL removes it after `retentionDays`. */
  async put(record: UsageRecord, retentionDays: number): Promise<void> {
    await this.run('PutItem', (abortSignal) =>
      this.client.send(new PutCommand({ TableName: this.tableName, Item: toItem(record, retentionDays) }), {
        abortSignal,
      }),
    );
  }

  /** Stores many records with BatchWriteItem (bulk loads, benchmarks). */
  putBatch(records: readonly UsageRecord[], retentionDays: number): Promise<void> {
    return this.batchPut(records.map((record) => toItem(record, retentionDays)));
  }

  /** Records of a branch (or of one of its keys), newest first, one page at a time. */
  async query({ branchId, keyId, since, limit, cursor }: UsageQuery): Promise<UsagePage> {
    const byKey = keyId !== undefined;
    const values: Record<string, unknown> = { ':pk': byKey ? keyId : branchId };
    let condition = `${byKey ? 'key_id' : 'branch_id'} = :pk`;
    if (since) {
      condition += ' AND sk >= :since';
      values[':since'] = since.toISOString();
    }
    if (byKey) values[':branch'] = branchId;
    const page = await this.run('Query', (abortSignal) =>
      this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          ...(byKey ? { IndexName: USAGE_BY_KEY_INDEX, FilterExpression: 'branch_id = :branch' } : {}),
          KeyConditionExpression: condition,
          ExpressionAttributeValues: values,
          ScanIndexForward: false,
          Limit: limit,
          ...(cursor ? { ExclusiveStartKey: decodeCursor(cursor) } : {}),
        }),
        { abortSignal },
      ),
    );
    return {
      records: (page.Items ?? []).map(toRecord),
      ...(page.LastEvaluatedKey ? { nextCursor: encodeCursor(page.LastEvaluatedKey) } : {}),
    };
  }

  /** When a key was last used, from its newest usage record. */
  async lastUsedAt(keyId: string): Promise<string | undefined> {
    const { Items } = await this.run('Query', (abortSignal) =>
      this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: USAGE_BY_KEY_INDEX,
          KeyConditionExpression: 'key_id = :key',
          ExpressionAttributeValues: { ':key': keyId },
          ScanIndexForward: false,
          Limit: 1,
          ProjectionExpression: '#ts',
          ExpressionAttributeNames: { '#ts': 'timestamp' },
        }),
        { abortSignal },
      ),
    );
    return Items?.[0]?.timestamp as string | undefined;
  }
}
