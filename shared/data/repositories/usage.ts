import pLimit from 'p-limit';
import { DynamoRepository, expiresAtEpoch } from '../dynamodb';
import { USAGE_WRITE_SHARDS } from '../tables';
import type { UsageRecord } from '../../domain/usage-record';
import { mergeNewestFirst, usageShardOf, type ShardReader } from './usage-shards';

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
  /** Opaque position of the next page (the last record's sort key); absent on the last page. */
  nextPosition?: string;
}

/** The longest sort key a position may carry: `<timestamp>#<request id>` is far shorter. */
const MAX_POSITION_LENGTH = 512;

/** A record's sort key in its shard: time first, so a shard reads newest first. */
const sortKeyOf = (record: Pick<UsageRecord, 'timestamp' | 'request_id'>): string =>
  `${record.timestamp}#${record.request_id}`;

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

/** Where a page that ends on this record continues: the records older than it. */
export const positionAfter = (record: Pick<UsageRecord, 'timestamp' | 'request_id'>): string =>
  encodePosition(sortKeyOf(record));

export class InvalidUsagePositionError extends Error {
  override name = 'InvalidUsagePositionError';
}

const toRecord = (item: Record<string, unknown>): UsageRecord => {
  const { pk: _pk, sk: _sk, expires_at_epoch: _ttl, ...record } = item;
  return record as unknown as UsageRecord;
};

/** A record's table key: its branch's write shard (by request id) and its time. */
const itemKeyOf = (record: UsageRecord) => ({
  pk: `${record.branch_id}#${usageShardOf(record.request_id)}`,
  sk: sortKeyOf(record),
});

/** The table item of a record: its keys in its write shard, and its TTL (bulk loads outside the repository use it too). */
export const usageItemOf = (record: UsageRecord, retentionDays: number) => ({
  ...record,
  ...itemKeyOf(record),
  expires_at_epoch: expiresAtEpoch(record.timestamp, retentionDays),
});

/** What one merged read of the usage table asks for. */
interface ShardedRead {
  branchId: string;
  keyId?: string;
  since?: Date;
  /** Only records older than this sort key. */
  before?: string;
  limit: number;
  /** Attributes to read (always with `sk`); all when absent. */
  attributes?: readonly string[];
}

/**
 * Shard queries one repository has in flight at most: however many keys a caller reads at once
 * (an audit of a whole page), the connections stay bounded.
 */
const SHARD_QUERIES_IN_FLIGHT = 32;

/** The endpoints' one call on the usage table: the chain's usage record (shared/api/middlewares/record-usage.ts). */
export class UsageRecorder extends DynamoRepository {
  /** Stores one record in its write shard; DynamoDB TTL removes it after `retentionDays`. */
  async put(record: UsageRecord, retentionDays: number): Promise<void> {
    await this.putItem({ Item: usageItemOf(record, retentionDays) });
  }
}

export class UsageRepository extends UsageRecorder {
  private readonly gate = pLimit(SHARD_QUERIES_IN_FLIGHT);

  /** Stores many records with BatchWriteItem (the operator's replay, bulk loads). */
  putBatch(records: readonly UsageRecord[], retentionDays: number): Promise<void> {
    return this.batchPut(records.map((record) => usageItemOf(record, retentionDays)));
  }

  /** Records of a branch (or of one of its keys), newest first across the write shards, one page at a time. */
  async query({ branchId, keyId, since, until, limit, position }: UsageQuery): Promise<UsageLogPage> {
    // Decoded before the call, so a bad position is its own domain error, not a data-store failure.
    const after = position ? decodePosition(position) : undefined;
    // Sort keys are `<timestamp>#<request id>`: `until` (exclusive) is a bound on them too.
    const untilKey = until?.toISOString();
    const before = after !== undefined && untilKey !== undefined && untilKey < after ? untilKey : (after ?? untilKey);
    const { items, more } = await this.readMerged({ branchId, keyId, since, before, limit });
    const last = items.at(-1);
    return {
      records: items.map(toRecord),
      ...(more && last ? { nextPosition: encodePosition(String(last.sk)) } : {}),
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
    const attributes = ['status', 'response_time_ms'];
    const { items } = await this.readMerged({ branchId, keyId, since, limit: maxRecords + 1, attributes });
    return {
      calls: items.slice(0, maxRecords) as unknown as Pick<UsageRecord, 'status' | 'response_time_ms'>[],
      complete: items.length <= maxRecords,
    };
  }

  /**
   * Which of these records are stored already (by request id): a replay writes only the others,
   * so writing a file twice adds nothing and the stream carries each call once.
   */
  async storedAlready(records: readonly UsageRecord[]): Promise<Set<string>> {
    // One key per item: a batch may not name one twice.
    const keys = new Map(
      records.map((record) => [`${record.branch_id}\u0000${itemKeyOf(record).sk}`, itemKeyOf(record)]),
    );
    const { items } = await this.batchGet([...keys.values()], { projection: 'pk, sk, request_id' });
    return new Set(items.map((item) => String(item.request_id)));
  }

  /**
   * The newest records of a branch, or of one of its keys (the branch's records filtered: each read
   * pays for the branch's records it passes, docs/decisions.md "Cost"), merged across the write shards.
   */
  private readMerged({ branchId, keyId, since, before, limit, attributes }: ShardedRead) {
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
    const filtered = keyId !== undefined;
    const names = attributes ? Object.fromEntries(attributes.map((name, i) => [`#a${i}`, name])) : undefined;
    const read: ShardReader = async (shard, startKey) => {
      const page = await this.gate(() =>
        this.queryOnce({
          KeyConditionExpression: `pk = :pk${range}`,
          FilterExpression: filtered ? 'key_id = :key' : undefined,
          ExpressionAttributeValues: {
            ':pk': `${branchId}#${shard}`,
            ...(sinceKey === undefined ? {} : { ':since': sinceKey }),
            ...(before === undefined ? {} : { ':before': before }),
            ...(filtered ? { ':key': keyId } : {}),
          },
          ProjectionExpression: names && ['sk', ...Object.keys(names)].join(', '),
          ExpressionAttributeNames: names,
          ScanIndexForward: false,
          // An even share and one more: records spread evenly; the merge reads on where they don't.
          Limit: Math.ceil(limit / USAGE_WRITE_SHARDS) + 1,
          ExclusiveStartKey: startKey,
        }),
      );
      const items = (page.Items ?? []).filter((item) => item.sk !== before);
      return { items, ...(page.LastEvaluatedKey ? { lastKey: page.LastEvaluatedKey } : {}) };
    };
    return mergeNewestFirst(read, limit);
  }
}
