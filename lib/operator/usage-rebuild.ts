/**
 * `usage rebuild`: recounts the rollups of a period from the raw usage records, hour by hour
 * (docs/usage-rollups.md "Rebuild"). Memory holds one hour's counters (keys × statuses, routes
 * and buckets), never the records; each item is rewritten only if the aggregator did not touch
 * it since the rebuild read it, so the two never count a call twice.
 */
import { positiveIntEnv } from '../../shared/lambda/config';
import { addCall, hourItemSk, hourOf, type Counters } from '../../shared/domain/rollups';
import type { StoredHour } from '../../shared/data/repositories/rollups';
import type { OperatorContext } from './context';
import { OperatorError, requireBranch, requireKeyOfBranch } from './operations';
import { hourRange, parsePeriod, rollupRetentionDays, usageRetentionDays, type Env } from './usage-rollups';

const HOUR_MS = 3_600_000;
const REBUILD_PAGE = 1000;
/** Rounds of one hour when the aggregator keeps writing to it during the recount. */
const HOUR_ATTEMPTS = 3;
/**
 * An hour is rebuilt once it ended this long ago: its calls have all reached the aggregator
 * (lag target 60 s deployed, 5 s locally), so none of them is still on its way to be counted
 * a second time after the recount (docs/usage-rollups.md "Rebuild").
 */
export const DEFAULT_SETTLE_SECONDS = 120;

export interface RebuildRequest {
  branchId: string;
  keyId?: string;
  since: string;
  until?: string;
  now?: Date;
  env?: Env;
  /**
   * Hours that ended less than this long ago are left alone. 0: every hour is rebuilt, the
   * current one too — only when nothing else writes usage (a benchmark, an offline repair).
   * @default ROLLUP_SETTLE_SECONDS or 120
   */
  settleSeconds?: number;
  /** Called after each hour: hours done, hours in all, raw records read so far. */
  onProgress?: (progress: { hours: number; of: number; records: number }) => void;
}

export interface RebuildResult {
  branch_id: string;
  key_id: string | null;
  /** Whole hours: the rollups' granularity. */
  since: string;
  until: string;
  /** Raw usage records read (and counted). */
  records: number;
  /** Hour items rewritten. */
  items: number;
  /** Calls the rollups of those hours showed before, and show now. */
  calls_before: number;
  calls_after: number;
  /** Hours of the period not rebuilt because they ended less than the settle time ago. */
  open_hours: string[];
  /** Hours the aggregator kept writing to during every attempt (run the rebuild again). */
  busy_hours: string[];
  /** Set-aside records the rebuild counted, no longer reported. */
  set_aside_cleared: number;
}

interface Recount {
  items: Map<string, { keyId: string; counters: Counters }>;
  records: number;
}

/** The calls of one hour (of a branch or one key), counted per key, a page at a time. */
const recountHour = async (ctx: OperatorContext, branchId: string, keyId: string | undefined, hour: string) => {
  const recount: Recount = { items: new Map(), records: 0 };
  let position: string | undefined;
  do {
    const page = await ctx.usage.query({
      branchId,
      since: new Date(hour),
      until: new Date(Date.parse(hour) + HOUR_MS),
      limit: REBUILD_PAGE,
      ...(keyId !== undefined ? { keyId } : {}),
      ...(position ? { position } : {}),
    });
    for (const record of page.records) {
      if (hourOf(record.timestamp) !== hour) continue;
      const sk = hourItemSk(hour, record.key_id);
      const item = recount.items.get(sk) ?? { keyId: record.key_id, counters: new Map() };
      addCall(item.counters, record);
      recount.items.set(sk, item);
      recount.records += 1;
    }
    position = page.nextPosition;
  } while (position);
  return recount;
};

/**
 * One hour: read the items (their versions), recount the raw records, rewrite each item whose
 * version did not move. An item the aggregator wrote to in between is recounted again.
 */
const rebuildHour = async (
  ctx: OperatorContext,
  { branchId, keyId }: { branchId: string; keyId: string | undefined },
  hour: string,
  retentionDays: number,
  result: RebuildResult,
) => {
  let pending: Set<string> | undefined;
  for (let attempt = 0; attempt < HOUR_ATTEMPTS; attempt += 1) {
    const stored = await ctx.rollups.storedHours({
      branchId,
      fromHour: hour,
      toHour: hour,
      ...(keyId ? { keyId } : {}),
    });
    const recount = await recountHour(ctx, branchId, keyId, hour);
    const all = new Map<string, { keyId: string; counters: Counters; stored: StoredHour | undefined }>();
    for (const [sk, item] of stored)
      all.set(sk, { keyId: sk.slice(hourItemSk(hour, '').length), counters: new Map(), stored: item });
    for (const [sk, item] of recount.items) all.set(sk, { ...item, stored: stored.get(sk) });
    const busy = new Set<string>();
    for (const [sk, item] of all) {
      if (pending && !pending.has(sk)) continue;
      if (
        await ctx.rollups.replaceHour({ branchId, keyId: item.keyId, hour }, item.counters, item.stored, retentionDays)
      ) {
        result.items += 1;
        result.calls_before += item.stored?.calls ?? 0;
        result.calls_after += item.counters.get('calls') ?? 0;
      } else busy.add(sk);
    }
    if (attempt === 0) result.records += recount.records;
    if (busy.size === 0) return;
    pending = busy;
  }
  result.busy_hours.push(hour);
};

export const rebuildRollups = async (ctx: OperatorContext, request: RebuildRequest): Promise<RebuildResult> => {
  const env = request.env ?? process.env;
  const now = request.now ?? new Date();
  const period = parsePeriod(request, {
    now,
    maxDays: usageRetentionDays(env),
    kept: 'how long raw usage records are kept',
  });
  const keptDays = usageRetentionDays(env);
  if (period.since.getTime() < now.getTime() - keptDays * 24 * HOUR_MS) {
    // Their raw records are gone (or going): a recount would erase what the rollups still hold.
    throw new OperatorError(`--since must be within the last ${keptDays} days: older raw usage records are not kept`);
  }
  if (request.keyId !== undefined) await requireKeyOfBranch(ctx, request.branchId, request.keyId);
  else await requireBranch(ctx, request.branchId);
  const settleMs =
    (request.settleSeconds ?? positiveIntEnv(env, 'ROLLUP_SETTLE_SECONDS', DEFAULT_SETTLE_SECONDS)) * 1000;
  const { fromHour, toHour } = hourRange(period);
  const result: RebuildResult = {
    branch_id: request.branchId,
    key_id: request.keyId ?? null,
    since: fromHour,
    until: new Date(Date.parse(toHour) + HOUR_MS).toISOString(),
    records: 0,
    items: 0,
    calls_before: 0,
    calls_after: 0,
    open_hours: [],
    busy_hours: [],
    set_aside_cleared: 0,
  };
  const hours: string[] = [];
  for (let t = Date.parse(fromHour); t <= Date.parse(toHour); t += HOUR_MS) hours.push(new Date(t).toISOString());
  const retentionDays = rollupRetentionDays(env);
  let settledUntil = fromHour;
  for (const [done, hour] of hours.entries()) {
    if (settleMs > 0 && Date.parse(hour) + HOUR_MS > now.getTime() - settleMs) result.open_hours.push(hour);
    else {
      await rebuildHour(ctx, { branchId: request.branchId, keyId: request.keyId }, hour, retentionDays, result);
      settledUntil = new Date(Date.parse(hour) + HOUR_MS).toISOString();
    }
    request.onProgress?.({ hours: done + 1, of: hours.length, records: result.records });
  }
  if (settledUntil > fromHour) {
    result.set_aside_cleared = await ctx.rollups.clearSetAside(request.branchId, fromHour, settledUntil, request.keyId);
  }
  return result;
};
