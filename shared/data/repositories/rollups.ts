import { QueryCommand, UpdateCommand, type QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import { ConditionNotMetError } from '../data-store-errors';
import { DynamoRepository } from '../dynamodb';
import {
  addCall,
  appliedId,
  hourItemSk,
  hourOf,
  HOUR_ITEM_PREFIX,
  LAST_USED_PREFIX,
  lastUsedSk,
  toHourRollup,
  type Counters,
  type HourRollup,
} from '../../domain/rollups';
import { ROLLUPS_BY_KEY_INDEX } from '../tables';
import type { UsageRecord } from './usage';

const DAY_SECONDS = 86_400;
/**
 * Calls applied by one UpdateItem: its condition names each one's id, and a condition expression
 * is limited to 4 KB.
 */
export const APPLY_CHUNK = 50;

export interface ApplyResult {
  /** Calls counted by this apply. */
  applied: number;
  /** Calls already counted before (a redelivery), skipped. */
  duplicates: number;
}

export interface RollupQuery {
  branchId: string;
  keyId?: string;
  /** First hour (inclusive), as hourOf() gives. */
  fromHour: string;
  /** Last hour (inclusive). */
  toHour: string;
}

const groupBy = <T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> => {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const group = groups.get(k);
    if (group) group.push(item);
    else groups.set(k, [item]);
  }
  return groups;
};

/** Writes in flight at once: a rebuild page of 1,000 calls spread over many items must not flood the table. */
export const APPLY_CONCURRENCY = 16;

const inParallel = async <T>(items: readonly T[], work: (item: T) => Promise<void>): Promise<void> => {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await work(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(APPLY_CONCURRENCY, items.length) }, worker));
};

export class RollupsRepository extends DynamoRepository {
  /**
   * Adds calls to their hour items, exactly once each however often they are applied, in
   * whatever split or order (docs/decisions.md "Usage rollups"): every UpdateItem adds the
   * calls' ids to the item's `applied` set in the same write as their counters, on condition
   * that none of them is in it yet. When a chunk was partly applied before, its calls are
   * applied one by one, each under its own condition.
   */
  async apply(records: readonly UsageRecord[], retentionDays: number): Promise<ApplyResult> {
    const result: ApplyResult = { applied: 0, duplicates: 0 };
    // The same call twice in one delivery counts once: deduplicate before building a condition.
    const unique = [...new Map(records.map((record) => [record.request_id, record])).values()];
    result.duplicates += records.length - unique.length;
    const items = groupBy(unique, (r) => `${r.branch_id}\u0000${r.key_id}\u0000${hourOf(r.timestamp)}`);
    const chunks = [...items.values()].flatMap((group) => {
      const out: UsageRecord[][] = [];
      for (let i = 0; i < group.length; i += APPLY_CHUNK) out.push(group.slice(i, i + APPLY_CHUNK));
      return out;
    });
    await inParallel(chunks, async (chunk) => {
      if (await this.applyChunk(chunk, retentionDays)) {
        result.applied += chunk.length;
        return;
      }
      for (const record of chunk) {
        if (await this.applyChunk([record], retentionDays)) result.applied += 1;
        else result.duplicates += 1;
      }
    });
    await inParallel([...groupBy(unique, (r) => `${r.branch_id}\u0000${r.key_id}`).values()], (calls) =>
      this.touchLastUsed(calls, retentionDays),
    );
    return result;
  }

  /** One conditional UpdateItem for calls of one item; false when one of them was applied before. */
  private async applyChunk(chunk: readonly UsageRecord[], retentionDays: number): Promise<boolean> {
    const first = chunk[0]!;
    const hour = hourOf(first.timestamp);
    const counters: Counters = new Map();
    for (const record of chunk) addCall(counters, record);
    const names: Record<string, string> = { '#applied': 'applied', '#hour': 'hour' };
    const values: Record<string, unknown> = {
      ':ids': new Set(chunk.map((record) => appliedId(record.request_id))),
      ':key': first.key_id,
      ':hour': hour,
      ':expires': Math.floor(Date.parse(hour) / 1000) + retentionDays * DAY_SECONDS,
    };
    const adds = [...counters.entries()].map(([name, by], i) => {
      names[`#c${i}`] = name;
      values[`:c${i}`] = by;
      return `#c${i} :c${i}`;
    });
    const conditions = chunk.map((record, i) => {
      values[`:id${i}`] = appliedId(record.request_id);
      return `NOT contains(#applied, :id${i})`;
    });
    try {
      await this.run('UpdateItem', (abortSignal) =>
        this.client.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: { branch_id: first.branch_id, sk: hourItemSk(hour, first.key_id) },
            UpdateExpression: `ADD ${adds.join(', ')}, #applied :ids SET key_id = :key, #hour = :hour, expires_at_epoch = :expires`,
            ConditionExpression: conditions.join(' AND '),
            ExpressionAttributeNames: names,
            ExpressionAttributeValues: values,
          }),
          { abortSignal },
        ),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionNotMetError) return false;
      throw error;
    }
  }

  /** Keeps the newest call time of a key: a maximum, so order and repetition don't matter. */
  private async touchLastUsed(calls: readonly UsageRecord[], retentionDays: number): Promise<void> {
    const newest = calls.reduce((a, b) => (b.timestamp > a.timestamp ? b : a));
    try {
      await this.run('UpdateItem', (abortSignal) =>
        this.client.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: { branch_id: newest.branch_id, sk: lastUsedSk(newest.key_id) },
            UpdateExpression: 'SET key_id = :key, last_used_at = :at, expires_at_epoch = :expires',
            ConditionExpression: 'attribute_not_exists(last_used_at) OR last_used_at < :at',
            ExpressionAttributeValues: {
              ':key': newest.key_id,
              ':at': newest.timestamp,
              ':expires': Math.floor(Date.parse(newest.timestamp) / 1000) + retentionDays * DAY_SECONDS,
            },
          }),
          { abortSignal },
        ),
      );
    } catch (error) {
      if (!(error instanceof ConditionNotMetError)) throw error;
    }
  }

  private async queryAll(input: Omit<QueryCommandInput, 'TableName'>): Promise<Record<string, unknown>[]> {
    const items: Record<string, unknown>[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.run('Query', (abortSignal) =>
        this.client.send(
          new QueryCommand({ TableName: this.tableName, ...input, ...(start ? { ExclusiveStartKey: start } : {}) }),
          { abortSignal },
        ),
      );
      items.push(...(page.Items ?? []));
      start = page.LastEvaluatedKey;
    } while (start);
    return items;
  }

  /**
   * The hour items of a branch (or one of its keys) in a period: one item per key and hour with
   * calls, so what is read grows with hours × keys, never with calls.
   */
  async hours({ branchId, keyId, fromHour, toHour }: RollupQuery): Promise<HourRollup[]> {
    const range = { ':from': `${HOUR_ITEM_PREFIX}${fromHour}`, ':to': `${HOUR_ITEM_PREFIX}${toHour}\uffff` };
    const items = await this.queryAll(
      keyId === undefined
        ? {
            KeyConditionExpression: 'branch_id = :pk AND sk BETWEEN :from AND :to',
            ExpressionAttributeValues: { ':pk': branchId, ...range },
          }
        : {
            IndexName: ROLLUPS_BY_KEY_INDEX,
            KeyConditionExpression: 'key_id = :pk AND sk BETWEEN :from AND :to',
            FilterExpression: 'branch_id = :branch',
            ExpressionAttributeValues: { ':pk': keyId, ':branch': branchId, ...range },
          },
    );
    return items.map(toHourRollup);
  }

  /** When each key of a branch was last used (key id → ISO time), in one Query. */
  async lastUsed(branchId: string): Promise<Map<string, string>> {
    const items = await this.queryAll({
      KeyConditionExpression: 'branch_id = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': branchId, ':prefix': LAST_USED_PREFIX },
      ProjectionExpression: 'key_id, last_used_at',
    });
    return new Map(items.map((item) => [String(item.key_id), String(item.last_used_at)]));
  }
}
