/**
 * The rollups table (docs/usage-rollups.md): hour items applied from the stream past their
 * watermarks, read back for summaries and replaced by a rebuild's recount; beside them the
 * aggregator's progress ("as of"); what could not be applied yet is in ./rollup-repairs.ts.
 */
import pLimit from 'p-limit';
import { ConditionNotMetError } from '../data-store-errors';
import { DynamoRepository, expiresAtEpoch } from '../dynamodb';
import {
  addCall,
  hourItemOf,
  hourItemSk,
  HOUR_ITEM_PREFIX,
  isRefusal,
  LAST_USED_PREFIX,
  lastUsedSk,
  pastWatermark,
  toHourRollup,
  watermarkName,
  WATERMARK_PREFIX,
  type Counters,
  type HourRollup,
  type KeyUse,
  type StreamCall,
} from '../../domain/rollups';
import { ROLLUPS_BY_KEY_INDEX } from '../tables';
import { RollupRepairsRepository } from './rollup-repairs';
import type { UsageRecord } from '../../domain/usage-record';

/** The aggregator's progress item: a partition no branch id can be (ids never start with `#`). */
const PROGRESS_KEY = { branch_id: '#aggregator', sk: 'progress' };

/** Tries of one group when its watermark moved between the read and the write (another writer on the same source). */
const GROUP_ATTEMPTS = 5;

export interface ApplyResult {
  /** Calls counted by this apply. */
  applied: number;
  /** Calls at or below their item's watermark (a redelivery), skipped. */
  duplicates: number;
  /** Calls that could not be applied, with why: the caller reports them for a retry. */
  failed: { call: StreamCall; error: unknown }[];
}

export interface RollupQuery {
  branchId: string;
  keyId?: string;
  /** First hour (inclusive), as hourOf() gives. */
  fromHour: string;
  /** Last hour (inclusive). */
  toHour: string;
}

/** An hour item as stored, for a rebuild: its version and watermarks are kept across the rewrite. */
export interface StoredHour {
  sk: string;
  version: number;
  watermarks: Record<string, string>;
  calls: number;
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

/** Writes in flight at once: a batch spread over many items must not flood the table. */
const APPLY_CONCURRENCY = 16;

const inParallel = async <T>(items: readonly T[], work: (item: T) => Promise<void>): Promise<void> => {
  await pLimit(APPLY_CONCURRENCY).map(items, work);
};

export class RollupsRepository extends DynamoRepository {
  /** Calls set aside and the local feed's crash marks, in the same table (./rollup-repairs.ts). */
  readonly repairs = new RollupRepairsRepository(this.client, this.tableName);

  /**
   * Adds calls to their hour items exactly once (docs/usage-rollups.md "Exactly once"): per item,
   * one conditional UpdateItem adds the calls of all its sources past their watermarks and moves
   * them; after a redelivery, one per source, so nothing is added twice. A group that fails is
   * returned in `failed`; the others are applied.
   */
  async apply(calls: readonly StreamCall[], retentionDays: number): Promise<ApplyResult> {
    const result: ApplyResult = { applied: 0, duplicates: 0, failed: [] };
    const applyGroup = async (group: readonly StreamCall[]) => {
      try {
        const applied = await this.applyGroup(group, retentionDays);
        result.applied += applied;
        result.duplicates += group.length - applied;
      } catch (error) {
        for (const call of group) result.failed.push({ call, error });
      }
    };
    const items = groupBy(calls, ({ record }) => JSON.stringify(Object.values(hourItemOf(record))));
    await inParallel([...items.values()], async (itemCalls) => {
      const sources = [...groupBy(itemCalls, ({ source }) => source).values()];
      // One write for all of an item's sources when none of their calls was applied (docs/usage-rollups.md "Cost").
      if (sources.length > 1 && (await this.addAllSources(sources, retentionDays, itemCalls, result))) return;
      for (const group of sources) await applyGroup(group);
    });
    const failed = new Set(result.failed.map((f) => f.call));
    const applied = calls.filter((call) => !failed.has(call)).map(({ record }) => record);
    const byKey = groupBy(applied, (record) => `${record.branch_id}\u0000${record.key_id}`);
    await inParallel([...byKey.values()], (records) => this.touchLastUsed(records, retentionDays));
    return result;
  }

  /**
   * All of an item's sources in one UpdateItem, on condition that every source's watermark is below
   * its first call: true when written; false when one was not (a redelivery), for the per-source path.
   */
  private async addAllSources(
    sources: readonly (readonly StreamCall[])[],
    retentionDays: number,
    itemCalls: readonly StreamCall[],
    result: ApplyResult,
  ): Promise<boolean> {
    const pending = sources.map((group) => ({ source: group[0]!.source, calls: pastWatermark(group, undefined) }));
    try {
      await this.addCalls(this.itemKey(itemCalls[0]!.record), pending, retentionDays);
    } catch (error) {
      if (error instanceof ConditionNotMetError) return false;
      for (const call of itemCalls) result.failed.push({ call, error });
      return true;
    }
    const applied = pending.reduce((sum, { calls }) => sum + calls.length, 0);
    result.applied += applied;
    result.duplicates += itemCalls.length - applied;
    return true;
  }

  /** One item × source: optimistic first (nothing of it applied yet), else read the watermark and apply what is past it. */
  private async applyGroup(group: readonly StreamCall[], retentionDays: number): Promise<number> {
    const { source } = group[0]!;
    const key = this.itemKey(group[0]!.record);
    let watermark: string | undefined;
    let known = false;
    for (let attempt = 0; attempt < GROUP_ATTEMPTS; attempt += 1) {
      const calls = pastWatermark(group, watermark);
      if (calls.length === 0) return 0;
      const expected = known && watermark !== undefined ? { expected: watermark } : {};
      if (await this.ifConditionMet(this.addCalls(key, [{ source, calls, ...expected }], retentionDays))) {
        return calls.length;
      }
      const item = await this.consistentGet(key, watermarkName(source));
      watermark = item?.[watermarkName(source)] as string | undefined;
      known = true;
    }
    throw new Error(`The watermark of ${key.sk} kept moving; the batch will be retried`);
  }

  private itemKey(record: Pick<UsageRecord, 'branch_id' | 'key_id' | 'timestamp'>) {
    const { branchId, keyId, hour } = hourItemOf(record);
    return { branch_id: branchId, sk: hourItemSk(hour, keyId) };
  }

  /**
   * The UpdateItem: counters added, `v` (the version a rebuild checks) bumped, each source's
   * watermark set to its newest call's sequence. Its condition, per source: with `expected`
   * unknown, the watermark is absent or below the oldest call; with `expected` read, it is still
   * exactly that.
   */
  private async addCalls(
    key: { branch_id: string; sk: string },
    sources: readonly { source: string; calls: readonly StreamCall[]; expected?: string }[],
    retentionDays: number,
  ): Promise<void> {
    const { record } = sources[0]!.calls[0]!;
    const counters: Counters = new Map();
    for (const { calls } of sources) for (const call of calls) addCall(counters, call.record);
    counters.set('v', 1);
    const { hour } = hourItemOf(record);
    const names: Record<string, string> = { '#hour': 'hour' };
    const values: Record<string, unknown> = {
      ':key': record.key_id,
      ':hour': hour,
      ':expires': expiresAtEpoch(hour, retentionDays),
    };
    const adds = [...counters.entries()].map(([name, by], i) => {
      names[`#c${i}`] = name;
      values[`:c${i}`] = by;
      return `#c${i} :c${i}`;
    });
    const sets: string[] = [];
    const conditions = sources.map(({ source, calls, expected }, i) => {
      names[`#w${i}`] = watermarkName(source);
      values[`:last${i}`] = calls.at(-1)!.sequence;
      sets.push(`#w${i} = :last${i}`);
      if (expected !== undefined) {
        values[`:expected${i}`] = expected;
        return `#w${i} = :expected${i}`;
      }
      values[`:first${i}`] = calls[0]!.sequence;
      return `(attribute_not_exists(#w${i}) OR #w${i} < :first${i})`;
    });
    await this.updateItem({
      Key: key,
      UpdateExpression: `ADD ${adds.join(', ')} SET key_id = :key, #hour = :hour, expires_at_epoch = :expires, ${sets.join(', ')}`,
      ConditionExpression: conditions.join(' AND '),
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    });
  }

  /** Keeps the newest accepted and the newest refused call of a key: maxima, so order and repetition don't matter. */
  private async touchLastUsed(calls: readonly UsageRecord[], retentionDays: number): Promise<void> {
    for (const refused of [false, true]) {
      const of = calls.filter((call) => isRefusal(call.status) === refused);
      if (of.length === 0) continue;
      const newest = of.reduce((a, b) => (b.timestamp > a.timestamp ? b : a));
      await this.setIfNewer(
        { branch_id: newest.branch_id, sk: lastUsedSk(newest.key_id) },
        refused ? 'last_refused_at' : 'last_used_at',
        newest.timestamp,
        {
          key_id: newest.key_id,
          expires_at_epoch: expiresAtEpoch(newest.timestamp, retentionDays),
          ...(refused ? { last_refused_status: newest.status } : {}),
        },
      );
    }
  }

  /** A branch's hour items in a period; a key's found through the `by-key` index (its keys only), then read. */
  private async hourItems({ branchId, keyId, fromHour, toHour }: RollupQuery) {
    const range = { ':from': `${HOUR_ITEM_PREFIX}${fromHour}`, ':to': `${HOUR_ITEM_PREFIX}${toHour}\uffff` };
    const { items: found } = await this.queryItems({
      ...(keyId === undefined ? {} : { IndexName: ROLLUPS_BY_KEY_INDEX, FilterExpression: 'branch_id = :branch' }),
      KeyConditionExpression: `${keyId === undefined ? 'branch_id = :branch' : 'key_id = :key'} AND sk BETWEEN :from AND :to`,
      ExpressionAttributeValues: { ':branch': branchId, ...(keyId === undefined ? {} : { ':key': keyId }), ...range },
    });
    if (keyId === undefined) return found;
    const { items } = await this.batchGet(found.map(({ sk }) => ({ branch_id: branchId, sk })));
    return items.sort((a, b) => String(a.sk).localeCompare(String(b.sk)));
  }

  /**
   * The hour items of a branch (or one of its keys) in a period: one item per key and hour with
   * calls, so what is read grows with hours × keys, never with calls.
   */
  async hours(query: RollupQuery): Promise<HourRollup[]> {
    return (await this.hourItems(query)).map(toHourRollup);
  }

  /** The hour items of a period as stored (version, watermarks), keyed by sort key: what a rebuild starts from. */
  async storedHours(query: RollupQuery): Promise<Map<string, StoredHour>> {
    const items = await this.hourItems(query);
    return new Map(
      items.map((item) => [
        String(item.sk),
        {
          sk: String(item.sk),
          version: Number(item.v ?? 0),
          calls: Number(item.calls ?? 0),
          watermarks: Object.fromEntries(
            Object.entries(item).filter(
              (entry): entry is [string, string] =>
                entry[0].startsWith(WATERMARK_PREFIX) && typeof entry[1] === 'string',
            ),
          ),
        },
      ]),
    );
  }

  /**
   * Replaces an hour item's counters with a recount, keeping its watermarks, on condition that
   * no call was applied to it since `stored` was read (its version is unchanged). False when one
   * was. The item stays marked `unverified` (by this rebuild) until `verified` clears it.
   */
  async replaceHour(
    item: { branchId: string; keyId: string; hour: string },
    counters: Counters,
    stored: StoredHour | undefined,
    { retentionDays, rebuild }: { retentionDays: number; rebuild: string },
  ): Promise<boolean> {
    return this.ifConditionMet(
      this.putItem({
        Item: {
          ...Object.fromEntries(counters),
          ...stored?.watermarks,
          branch_id: item.branchId,
          sk: hourItemSk(item.hour, item.keyId),
          key_id: item.keyId,
          hour: item.hour,
          expires_at_epoch: expiresAtEpoch(item.hour, retentionDays),
          v: (stored?.version ?? 0) + 1,
          unverified: rebuild,
        },
        ConditionExpression: stored ? 'v = :v' : 'attribute_not_exists(sk)',
        ...(stored ? { ExpressionAttributeValues: { ':v': stored.version } } : {}),
      }),
    );
  }

  /** Clears the `unverified` mark a rebuild left on these items (sort keys), unless another rebuild's replaced it. */
  async verified(branchId: string, sks: readonly string[], rebuild: string): Promise<void> {
    for (const sk of sks) {
      await this.ifConditionMet(
        this.updateItem({
          Key: { branch_id: branchId, sk },
          UpdateExpression: 'REMOVE unverified',
          ConditionExpression: 'unverified = :rebuild',
          ExpressionAttributeValues: { ':rebuild': rebuild },
        }),
      );
    }
  }

  /** When each key of a branch was last used and last refused (key id → its last-use item), in one Query. */
  async lastUsed(branchId: string): Promise<Map<string, KeyUse>> {
    const { items } = await this.queryItems({
      KeyConditionExpression: 'branch_id = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': branchId, ':prefix': LAST_USED_PREFIX },
      ProjectionExpression: 'key_id, last_used_at, last_refused_at, last_refused_status',
    });
    return new Map(items.map(({ key_id, ...use }) => [String(key_id), use as KeyUse]));
  }

  /** One attribute of an item, read strongly consistent. */
  private async consistentGet(key: Record<string, string>, attribute: string) {
    const { Item } = await this.getItem({
      Key: key,
      ConsistentRead: true,
      ProjectionExpression: '#p',
      ExpressionAttributeNames: { '#p': attribute },
    });
    return Item;
  }

  /** Sets a time attribute unless it already holds a later one (a maximum: order and repetition don't matter). */
  private async setIfNewer(key: Record<string, string>, name: string, at: string, extra: Record<string, unknown> = {}) {
    const fields = Object.entries({ [name]: at, ...extra });
    await this.ifConditionMet(
      this.updateItem({
        Key: key,
        UpdateExpression: `SET ${fields.map((_, i) => `#f${i} = :f${i}`).join(', ')}`,
        // The first field is the time.
        ConditionExpression: 'attribute_not_exists(#f0) OR #f0 < :f0',
        ExpressionAttributeNames: Object.fromEntries(fields.map(([field], i) => [`#f${i}`, field])),
        ExpressionAttributeValues: Object.fromEntries(fields.map(([, value], i) => [`:f${i}`, value])),
      }),
    );
  }

  /** The aggregator's progress: the newest call time of a batch fully applied (a maximum). */
  recordProgress(asOf: string): Promise<void> {
    return this.setIfNewer(PROGRESS_KEY, 'as_of', asOf, { updated_at: new Date().toISOString() });
  }

  /** The newest call time the aggregator has fully applied; undefined before its first batch. */
  async progress(): Promise<string | undefined> {
    const item = await this.consistentGet(PROGRESS_KEY, 'as_of');
    return typeof item?.as_of === 'string' ? item.as_of : undefined;
  }
}
