/**
 * What the rollups could not apply yet, kept in the rollups table beside them (docs/usage-rollups.md):
 * calls set aside until a rebuild repairs their period, and the local change feed's crash marks.
 */
import { DynamoRepository, expiresAtEpoch } from '../dynamodb';
import type { UsageRecord } from '../../domain/usage-record';

const SET_ASIDE_PREFIX = 'dead#';
/** The local change feed's crash marks (docs/decisions.md "Local store and change feed"), in a partition of their own. */
const PENDING_PARTITION = '#local-feed';
const pendingKey = (branchId: string, hour: string) => ({
  branch_id: PENDING_PARTITION,
  sk: `pending#${hour}#${branchId}`,
});
/** Set-aside records read to describe them: enough to name the period to rebuild. */
const SET_ASIDE_READ_LIMIT = 1000;

export interface SetAsideRecord {
  record: Partial<UsageRecord> & { branch_id: string };
  sequence: string;
  reason: string;
}

export interface SetAsideSummary {
  /** Records set aside (at most SET_ASIDE_READ_LIMIT are read). */
  count: number;
  complete: boolean;
  /** Call times of the oldest and newest. */
  oldest?: string;
  newest?: string;
}

export class RollupRepairsRepository extends DynamoRepository {
  /** Keeps a stream record the aggregator could not apply, under its branch, until a rebuild repairs its period. */
  async setAside({ record, sequence, reason }: SetAsideRecord, retentionDays: number): Promise<void> {
    const now = new Date().toISOString();
    await this.putItem({
      Item: {
        branch_id: record.branch_id,
        sk: `${SET_ASIDE_PREFIX}${sequence}`,
        record: JSON.stringify(record),
        call_time: typeof record.timestamp === 'string' ? record.timestamp : now,
        ...(typeof record.key_id === 'string' ? { call_key: record.key_id } : {}),
        reason: reason.slice(0, 500),
        set_aside_at: now,
        expires_at_epoch: expiresAtEpoch(Date.now(), retentionDays),
      },
    });
  }

  /** How many records of a branch are set aside, and the span of their call times. */
  async setAsideOf(branchId: string): Promise<SetAsideSummary> {
    const { items, complete } = await this.queryItems(
      {
        KeyConditionExpression: 'branch_id = :pk AND begins_with(sk, :prefix)',
        ExpressionAttributeValues: { ':pk': branchId, ':prefix': SET_ASIDE_PREFIX },
        ProjectionExpression: 'sk, call_time',
      },
      SET_ASIDE_READ_LIMIT,
    );
    const times = items.map((item) => String(item.call_time)).sort();
    return { count: items.length, complete, ...(times.length ? { oldest: times[0], newest: times.at(-1) } : {}) };
  }

  /** Forgets the set-aside records of a branch whose calls fall in [since, until): a rebuild counted them. */
  async clearSetAside(branchId: string, since: string, until: string, keyId?: string): Promise<number> {
    const { items } = await this.queryItems({
      KeyConditionExpression: 'branch_id = :pk AND begins_with(sk, :prefix)',
      FilterExpression: `call_time >= :since AND call_time < :until${keyId !== undefined ? ' AND call_key = :key' : ''}`,
      ExpressionAttributeValues: {
        ':pk': branchId,
        ':prefix': SET_ASIDE_PREFIX,
        ':since': since,
        ':until': until,
        ...(keyId !== undefined ? { ':key': keyId } : {}),
      },
      ProjectionExpression: 'sk',
    });
    for (const { sk } of items) await this.deleteItem({ Key: { branch_id: branchId, sk } });
    return items.length;
  }

  /** Marks a branch's hour as one that may hold calls not applied yet: a start after a crash recounts it. */
  async markPending(branchId: string, hour: string): Promise<void> {
    await this.putItem({ Item: { ...pendingKey(branchId, hour), branchId, hour } });
  }

  async clearPending(branchId: string, hour: string): Promise<void> {
    await this.deleteItem({ Key: pendingKey(branchId, hour) });
  }

  /** Every branch hour marked pending, oldest hour first. */
  async pendingHours(): Promise<{ branchId: string; hour: string }[]> {
    const { items } = await this.queryItems({
      KeyConditionExpression: 'branch_id = :pk',
      ExpressionAttributeValues: { ':pk': PENDING_PARTITION },
    });
    return items.map((item) => ({ branchId: String(item.branchId), hour: String(item.hour) }));
  }
}
