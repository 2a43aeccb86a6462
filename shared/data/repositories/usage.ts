import { BatchGetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoRepository } from '../dynamodb';
import { USAGE_BY_KEY_INDEX } from '../tables';
import type { UsageRecord } from '../../domain/usage-record';

export type { UsageRecord };

export interface UsageQuery {
  branchId: string;
  keyId?: string;
  /** Only records at or after this time. */
  since?: Date;
  /** Only records before this time (exclusive). */
  until?: Date;
  limit: number;
  /** Where to continue: a previous page's `nextPosition`. */
  position?: string;
}

/** One page of the usage log, newest first. */
export interface UsageLogPage {
  records: UsageRecord[];
  /** Opaque position of the next page (the table key it starts after); absent on the last page. */
  nextPosition?: string;
}

const DAY_SECONDS = 86_400;

const encodePosition = (key: Record<string, unknown>): string => Buffer.from(JSON.stringify(key)).toString('base64url');
const decodePosition = (position: string): Record<string, unknown> => {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(position, 'base64url').toString('utf8'));
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  } catch {
    // fall through
  }
  throw new InvalidUsagePositionError('The usage log position is not valid');
};

export class InvalidUsagePositionError extends Error {
  override name = 'InvalidUsagePositionError';
}

const toRecord = (item: Record<string, unknown>): UsageRecord => {
  const { sk: _sk, expires_at_epoch: _ttl, ...record } = item;
  return record as unknown as UsageRecord;
};

const BATCH_GET_LIMIT = 100;
const itemKeyOf = (record: UsageRecord) => ({
  branch_id: record.branch_id,
  sk: `${record.timestamp}#${record.request_id}`,
});

const toItem = (record: UsageRecord, retentionDays: number) => ({
  ...record,
  sk: itemKeyOf(record).sk,
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
  async query({ branchId, keyId, since, until, limit, position }: UsageQuery): Promise<UsageLogPage> {
    const byKey = keyId !== undefined;
    const values: Record<string, unknown> = { ':pk': byKey ? keyId : branchId };
    let condition = `${byKey ? 'key_id' : 'branch_id'} = :pk`;
    // Sort keys are `<timestamp>#<request id>`: a time bound is a bound on them.
    if (since && until) {
      condition += ' AND sk BETWEEN :since AND :until';
      values[':since'] = since.toISOString();
      values[':until'] = new Date(until.getTime() - 1).toISOString() + '\uffff';
    } else if (since) {
      condition += ' AND sk >= :since';
      values[':since'] = since.toISOString();
    } else if (until) {
      condition += ' AND sk < :until';
      values[':until'] = until.toISOString();
    }
    if (byKey) values[':branch'] = branchId;
    // Decoded before the call, so a bad position is its own domain error, not a data-store failure.
    const startKey = position ? decodePosition(position) : undefined;
    const page = await this.run('Query', (abortSignal) =>
      this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          ...(byKey ? { IndexName: USAGE_BY_KEY_INDEX, FilterExpression: 'branch_id = :branch' } : {}),
          KeyConditionExpression: condition,
          ExpressionAttributeValues: values,
          ScanIndexForward: false,
          Limit: limit,
          ...(startKey ? { ExclusiveStartKey: startKey } : {}),
        }),
        { abortSignal },
      ),
    );
    return {
      records: (page.Items ?? []).map(toRecord),
      ...(page.LastEvaluatedKey ? { nextPosition: encodePosition(page.LastEvaluatedKey) } : {}),
    };
  }

  /**
   * Status and response time of every call of a branch (or key) since a time, newest first, for a
   * summary of the whole period: at most `maxRecords` (`complete` false when there were more).
   */
  async callStats(
    { branchId, keyId, since }: Omit<UsageQuery, 'limit' | 'position'>,
    maxRecords: number,
  ): Promise<{ calls: Pick<UsageRecord, 'status' | 'response_time_ms'>[]; complete: boolean }> {
    const byKey = keyId !== undefined;
    const items = await this.queryItems<Pick<UsageRecord, 'status' | 'response_time_ms'>>(
      {
        ...(byKey ? { IndexName: USAGE_BY_KEY_INDEX, FilterExpression: 'branch_id = :branch' } : {}),
        KeyConditionExpression: `${byKey ? 'key_id' : 'branch_id'} = :pk${since ? ' AND sk >= :since' : ''}`,
        ExpressionAttributeValues: {
          ':pk': byKey ? keyId : branchId,
          ...(byKey ? { ':branch': branchId } : {}),
          ...(since ? { ':since': since.toISOString() } : {}),
        },
        ProjectionExpression: '#status, response_time_ms',
        ExpressionAttributeNames: { '#status': 'status' },
        ScanIndexForward: false,
      },
      maxRecords + 1,
    );
    return { calls: items.slice(0, maxRecords), complete: items.length <= maxRecords };
  }

  /**
   * Which of these records are stored already (by request id): a replay writes only the others,
   * so writing a file twice adds nothing and the stream carries each call once.
   */
  async storedAlready(records: readonly UsageRecord[]): Promise<Set<string>> {
    const found = new Set<string>();
    for (let i = 0; i < records.length; i += BATCH_GET_LIMIT) {
      const byKey = new Map(records.slice(i, i + BATCH_GET_LIMIT).map((r) => [itemKeyOf(r).sk + r.branch_id, r]));
      let pending: Record<string, unknown>[] = [...byKey.values()].map(itemKeyOf);
      for (let attempt = 0; pending.length > 0; attempt += 1) {
        if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(1000, 50 * 2 ** attempt)));
        const keys = pending;
        const output = await this.run('BatchGetItem', (abortSignal) =>
          this.client.send(
            new BatchGetCommand({
              RequestItems: { [this.tableName]: { Keys: keys, ProjectionExpression: 'branch_id, sk, request_id' } },
            }),
            { abortSignal },
          ),
        );
        for (const item of output.Responses?.[this.tableName] ?? []) found.add(String(item.request_id));
        pending = (output.UnprocessedKeys?.[this.tableName]?.Keys ?? []) as Record<string, unknown>[];
      }
    }
    return found;
  }

  /** When a key was last used, from its newest usage record. */
  async lastUsedAt(keyId: string): Promise<string | undefined> {
    const { Items } = await this.newestOfKey(keyId, 'timestamp', 1);
    return Items?.[0]?.timestamp as string | undefined;
  }

  /**
   * The route templates a key's calls used, newest calls first, reading at most `maxRecords`
   * records (route only, through the by-key index). `complete` is false when there were more.
   */
  async routesUsed(keyId: string, maxRecords: number): Promise<{ routes: Set<string>; complete: boolean }> {
    const routes = new Set<string>();
    let read = 0;
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.newestOfKey(keyId, 'route', Math.min(1000, maxRecords - read), startKey);
      for (const item of page.Items ?? []) if (typeof item.route === 'string') routes.add(item.route);
      read += page.Items?.length ?? 0;
      startKey = page.LastEvaluatedKey;
    } while (startKey && read < maxRecords);
    return { routes, complete: startKey === undefined };
  }

  /** One page of a key's records, newest first, through the by-key index: one attribute of each. */
  private newestOfKey(keyId: string, attribute: string, limit: number, startKey?: Record<string, unknown>) {
    return this.run('Query', (abortSignal) =>
      this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: USAGE_BY_KEY_INDEX,
          KeyConditionExpression: 'key_id = :key',
          ExpressionAttributeValues: { ':key': keyId },
          ScanIndexForward: false,
          Limit: limit,
          ProjectionExpression: '#attribute',
          ExpressionAttributeNames: { '#attribute': attribute },
          ExclusiveStartKey: startKey,
        }),
        { abortSignal },
      ),
    );
  }
}
