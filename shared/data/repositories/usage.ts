import { PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoRepository } from '../dynamodb';
import { USAGE_BY_KEY_INDEX } from '../tables';
import type { UsageRecord } from '../../domain/usage-record';
import { mergeNewestFirst, usageShardOf, type ShardReader } from './usage-shards';

export type { UsageRecord };

export interface UsageQuery {
  branchId: string;
  keyId?: string;
  /** Only records at or after this time. */
  since?: Date;
  limit: number;
  /** Where to continue: a previous page's `nextPosition`. */
  position?: string;
}

/** One page of the usage log, newest first. */
export interface UsageLogPage {
  records: UsageRecord[];
  /** Opaque position of the next page (the last record's sort key); absent on the last page. */
  nextPosition?: string;
}

const DAY_SECONDS = 86_400;
/** The longest sort key a position may carry: `<timestamp>#<request id>` is far shorter. */
const MAX_POSITION_LENGTH = 512;

// A position is the sort key of the last record shown: the next page is what is older, in the
// same branch (and key) the caller names. It carries no partition, so it can't widen the scope.
const encodePosition = (sortKey: string): string =>
  Buffer.from(JSON.stringify({ before: sortKey })).toString('base64url');
const decodePosition = (position: string): string => {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(position, 'base64url').toString('utf8'));
    const before = (parsed as { before?: unknown } | null)?.before;
    if (typeof before === 'string' && before.length > 0 && before.length <= MAX_POSITION_LENGTH) return before;
  } catch {
    // fall through
  }
  throw new InvalidUsagePositionError('The usage log position is not valid');
};

export class InvalidUsagePositionError extends Error {
  override name = 'InvalidUsagePositionError';
}

const toRecord = (item: Record<string, unknown>): UsageRecord => {
  const { pk: _pk, key_pk: _keyPk, sk: _sk, expires_at_epoch: _ttl, ...record } = item;
  return record as unknown as UsageRecord;
};

const toItem = (record: UsageRecord, retentionDays: number) => {
  const shard = usageShardOf(record.request_id);
  return {
    ...record,
    pk: `${record.branch_id}#${shard}`,
    key_pk: `${record.key_id}#${shard}`,
    sk: `${record.timestamp}#${record.request_id}`,
    expires_at_epoch: Math.floor(Date.parse(record.timestamp) / 1000) + retentionDays * DAY_SECONDS,
  };
};

/** What one merged read of the usage table asks for. */
interface ShardedRead {
  branchId?: string;
  keyId?: string;
  since?: Date;
  /** Only records older than this sort key. */
  before?: string;
  limit: number;
  /** Attributes to read (always with `sk`); all when absent. */
  attributes?: readonly string[];
}

export class UsageRepository extends DynamoRepository {
  /** Stores one record in its write shard; DynamoDB TTL removes it after `retentionDays`. */
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

  /** Records of a branch (or of one of its keys), newest first across the write shards, one page at a time. */
  async query({ branchId, keyId, since, limit, position }: UsageQuery): Promise<UsageLogPage> {
    // Decoded before the call, so a bad position is its own domain error, not a data-store failure.
    const before = position ? decodePosition(position) : undefined;
    const { items, more } = await this.readMerged({
      branchId,
      ...(keyId === undefined ? {} : { keyId }),
      ...(since ? { since } : {}),
      ...(before === undefined ? {} : { before }),
      limit,
    });
    const last = items.at(-1);
    return {
      records: items.map(toRecord),
      ...(more && last ? { nextPosition: encodePosition(String(last.sk)) } : {}),
    };
  }

  /** When a key was last used, from its newest usage record. */
  async lastUsedAt(keyId: string): Promise<string | undefined> {
    const { items } = await this.readMerged({ keyId, limit: 1, attributes: ['timestamp'] });
    return items[0]?.timestamp as string | undefined;
  }

  /**
   * The route templates a key's calls used, newest calls first, reading at most `maxRecords`
   * records (route only, through the by-key index). `complete` is false when there were more.
   */
  async routesUsed(keyId: string, maxRecords: number): Promise<{ routes: Set<string>; complete: boolean }> {
    const routes = new Set<string>();
    let read = 0;
    let before: string | undefined;
    let more: boolean;
    do {
      const limit = Math.min(1000, maxRecords - read);
      const page = await this.readMerged({ keyId, limit, attributes: ['route'], ...(before ? { before } : {}) });
      for (const item of page.items) if (typeof item.route === 'string') routes.add(item.route);
      read += page.items.length;
      before = page.items.at(-1)?.sk as string | undefined;
      more = page.more && before !== undefined;
    } while (more && read < maxRecords);
    return { routes, complete: !more };
  }

  /**
   * The newest records of a branch, or of a key (through the by-key index, only within `branchId`
   * when given), merged across the write shards (usage-shards.ts).
   */
  private readMerged({ branchId, keyId, since, before, limit, attributes }: ShardedRead) {
    const byKey = keyId !== undefined;
    // An exclusive upper bound with a lower one: BETWEEN is inclusive, so the bound itself is dropped below.
    const range =
      since && before !== undefined
        ? ' AND sk BETWEEN :since AND :before'
        : since
          ? ' AND sk >= :since'
          : before !== undefined
            ? ' AND sk < :before'
            : '';
    const sinceKey = since?.toISOString();
    if (sinceKey !== undefined && before !== undefined && before < sinceKey) {
      return Promise.resolve({ items: [], more: false });
    }
    const filtered = byKey && branchId !== undefined;
    const names = attributes ? Object.fromEntries(attributes.map((name, i) => [`#a${i}`, name])) : undefined;
    const read: ShardReader = async (shard, startKey) => {
      const page = await this.run('Query', (abortSignal) =>
        this.client.send(
          new QueryCommand({
            TableName: this.tableName,
            ...(byKey ? { IndexName: USAGE_BY_KEY_INDEX } : {}),
            KeyConditionExpression: `${byKey ? 'key_pk' : 'pk'} = :pk${range}`,
            ...(filtered ? { FilterExpression: 'branch_id = :branch' } : {}),
            ExpressionAttributeValues: {
              ':pk': `${byKey ? keyId : branchId}#${shard}`,
              ...(sinceKey === undefined ? {} : { ':since': sinceKey }),
              ...(before === undefined ? {} : { ':before': before }),
              ...(filtered ? { ':branch': branchId } : {}),
            },
            ...(names
              ? { ProjectionExpression: ['sk', ...Object.keys(names)].join(', '), ExpressionAttributeNames: names }
              : {}),
            ScanIndexForward: false,
            Limit: limit + 1,
            ...(startKey ? { ExclusiveStartKey: startKey } : {}),
          }),
          { abortSignal },
        ),
      );
      const items = (page.Items ?? []).filter((item) => item.sk !== before);
      return { items, ...(page.LastEvaluatedKey ? { lastKey: page.LastEvaluatedKey } : {}) };
    };
    return mergeNewestFirst(read, limit);
  }
}
