/**
 * `usage rebuild`: recounts the rollups of a period from the raw usage records, hour by hour
 * (docs/usage-rollups.md "Rebuild"), only the hours that hold a call or a rollup item, so a long
 * quiet period costs a few reads. Memory holds one hour's counters (keys × statuses, routes and
 * buckets), never the records; each item is rewritten only if the aggregator did not touch it
 * since the rebuild read it, so the two never count a call twice.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { positiveIntEnv } from '../../shared/config/env';
import { addCall, HOUR_ITEM_PREFIX, hourItemSk, hourOf, type Counters } from '../../shared/domain/rollups';
import type { StoredHour } from '../../shared/data/repositories/rollups';
import type { OperatorContext } from './context';
import { invalidInput } from './errors';
import { requireBranch } from './keys';
import { hourAfter, hourRange, parsePeriod, rollupRetentionDays, usageRetentionDays, type Env } from './usage-rollups';

const HOUR_MS = 3_600_000;
const REBUILD_PAGE = 1000;
/** Rounds of one hour when the aggregator keeps writing to it during the recount. */
const HOUR_ATTEMPTS = 3;
/** Checks after the rewrite (each after the longest lag) before an hour is reported busy. */
const CHECK_ROUNDS = 3;
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
  /**
   * Wait after the rewrite before checking that no call of the recount arrived late. 0: no check
   * (nothing else writes usage). @default ROLLUP_MAX_LAG_SECONDS, or 5 locally and 60 deployed
   */
  maxLagSeconds?: number;
  /** How the check waits. @default a timer (a test passes what happens meanwhile) */
  wait?: (ms: number) => Promise<void>;
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

/** The calls of one hour (of a branch or one key), counted per key, a page at a time. */
const recountHour = async ({ ctx, branchId, keyId }: Scope, hour: string) => {
  const recount = { items: new Map<string, { keyId: string; counters: Counters }>(), records: 0 };
  let position: string | undefined;
  do {
    const page = await ctx.usage.query({
      branchId,
      keyId,
      since: new Date(hour),
      until: new Date(hourAfter(hour)),
      limit: REBUILD_PAGE,
      position,
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
 * The hours from `fromHour` to `toHour` with anything to recount: those with rollup items (one
 * range read), and those with raw records, found newest first by reading one record and skipping
 * to the hour before it: a read per busy hour, none per empty one.
 */
const hoursToRebuild = async (scope: Scope, fromHour: string, toHour: string): Promise<Set<string>> => {
  // One hour: recounting it finds as fast whether it holds anything.
  if (fromHour === toHour) return new Set([fromHour]);
  const { ctx, branchId, keyId } = scope;
  const stored = await ctx.rollups.storedHours({ branchId, keyId, fromHour, toHour });
  const hours = new Set([...stored.keys()].map((sk) => sk.slice(HOUR_ITEM_PREFIX.length).split('#')[0]!));
  const since = new Date(fromHour);
  let until = new Date(hourAfter(toHour));
  for (;;) {
    const [newest] = (await ctx.usage.query({ branchId, keyId, since, until, limit: 1 })).records;
    if (!newest) return hours;
    const hour = hourOf(newest.timestamp);
    hours.add(hour);
    until = new Date(hour);
  }
};

interface Scope {
  ctx: OperatorContext;
  branchId: string;
  keyId: string | undefined;
  retentionDays: number;
  /** This rebuild's mark on the items it rewrites, until they are checked. */
  rebuild: string;
}

const hourQuery = ({ branchId, keyId }: Scope, hour: string) => ({ branchId, keyId, fromHour: hour, toHour: hour });

/** What the rebuild did, by hour and item; a redone hour overwrites its own entries. */
interface Tally {
  records: Map<string, number>;
  before: Map<string, number>;
  after: Map<string, number>;
}

/**
 * One hour: read the items (their versions), recount the raw records, rewrite each item whose
 * version did not move. An item the aggregator wrote to in between is recounted again. Returns
 * the version each rewritten item now has, or undefined when the aggregator kept writing.
 */
const rebuildHour = async (scope: Scope, hour: string, tally: Tally): Promise<Map<string, number> | undefined> => {
  const { ctx, branchId } = scope;
  const written = new Map<string, number>();
  let pending: Set<string> | undefined;
  for (let attempt = 0; attempt < HOUR_ATTEMPTS; attempt += 1) {
    const stored = await ctx.rollups.storedHours(hourQuery(scope, hour));
    const recount = await recountHour(scope, hour);
    tally.records.set(hour, recount.records);
    const all = new Map<string, { keyId: string; counters: Counters; stored: StoredHour | undefined }>();
    for (const [sk, item] of stored) {
      all.set(sk, { keyId: sk.slice(hourItemSk(hour, '').length), counters: new Map(), stored: item });
    }
    for (const [sk, item] of recount.items) all.set(sk, { ...item, stored: stored.get(sk) });
    const busy = new Set<string>();
    for (const [sk, item] of all) {
      if (pending && !pending.has(sk)) continue;
      const { counters, stored: before } = item;
      const replaced = await ctx.rollups.replaceHour({ branchId, keyId: item.keyId, hour }, counters, before, scope);
      if (!replaced) {
        busy.add(sk);
        continue;
      }
      if (!tally.before.has(sk)) tally.before.set(sk, before?.calls ?? 0);
      tally.after.set(sk, counters.get('calls') ?? 0);
      written.set(sk, (before?.version ?? 0) + 1);
    }
    if (busy.size === 0) return written;
    pending = busy;
  }
  return undefined;
};

/**
 * The check after the rewrite (docs/usage-rollups.md "Rebuild"): a call the recount read but the
 * stream had not yet delivered would be added again after the rewrite. Such a call reaches the
 * aggregator within the longest lag, so once that has passed an item whose version did not move
 * is exact; an hour whose items moved is recounted (its versions in `written` replaced) and
 * checked again. Returns the hours still moving after the last round.
 */
const checkHours = async (
  scope: Scope,
  written: Map<string, Map<string, number>>,
  wait: () => Promise<void>,
  tally: Tally,
) => {
  let pending = [...written.keys()];
  for (let round = 0; round < CHECK_ROUNDS && pending.length > 0; round += 1) {
    await wait();
    const moved: string[] = [];
    for (const hour of pending) {
      const stored = await scope.ctx.rollups.storedHours(hourQuery(scope, hour));
      if ([...written.get(hour)!].some(([sk, version]) => stored.get(sk)?.version !== version)) moved.push(hour);
    }
    // An hour still busy gets a version no item has: it counts as moved, and is redone next round.
    for (const hour of moved) written.set(hour, (await rebuildHour(scope, hour, tally)) ?? new Map([['', -1]]));
    pending = moved;
  }
  return pending;
};

export const rebuildRollups = async (ctx: OperatorContext, request: RebuildRequest): Promise<RebuildResult> => {
  const env = request.env ?? process.env;
  const now = request.now ?? new Date();
  const keptDays = usageRetentionDays(env);
  const period = parsePeriod(request, { now, maxDays: keptDays, kept: 'how long raw usage records are kept' });
  if (period.since.getTime() < now.getTime() - keptDays * 24 * HOUR_MS) {
    // Their raw records are gone (or going): a recount would erase what the rollups still hold.
    throw invalidInput('since', ` must be within the last ${keptDays} days: older raw usage records are not kept`);
  }
  await requireBranch(ctx, request.branchId, request.keyId);
  const settleMs =
    (request.settleSeconds ?? positiveIntEnv(env, 'ROLLUP_SETTLE_SECONDS', DEFAULT_SETTLE_SECONDS)) * 1000;
  const lagMs = (request.maxLagSeconds ?? maxLagSeconds(env)) * 1000;
  const { fromHour, toHour } = hourRange(period);
  const scope: Scope = {
    ctx,
    branchId: request.branchId,
    keyId: request.keyId,
    retentionDays: rollupRetentionDays(env),
    rebuild: randomUUID(),
  };
  const endMs = Date.parse(hourAfter(toHour));
  // Hours that ended less than the settle time ago are left alone: the hours before `settledEnd`.
  const settledEnd = settleMs > 0 ? Math.min(endMs, Date.parse(hourOf(now.getTime() - settleMs))) : endMs;
  const open: string[] = [];
  for (let t = Math.max(Date.parse(fromHour), settledEnd); t < endMs; t += HOUR_MS)
    open.push(new Date(t).toISOString());
  const settled = settledEnd > Date.parse(fromHour);
  const hours = settled ? [...(await hoursToRebuild(scope, fromHour, hourOf(settledEnd - HOUR_MS)))].sort() : [];
  const tally: Tally = { records: new Map(), before: new Map(), after: new Map() };
  const busy: string[] = [];
  const written = new Map<string, Map<string, number>>();
  for (const [done, hour] of hours.entries()) {
    const versions = await rebuildHour(scope, hour, tally);
    if (versions) written.set(hour, versions);
    else busy.push(hour);
    request.onProgress?.({ hours: done + 1, of: hours.length, records: sum(tally.records) });
  }
  const wait = () => (request.wait ?? sleep)(lagMs);
  if (lagMs > 0) busy.push(...(await checkHours(scope, written, wait, tally)));
  for (const [hour, versions] of written) {
    if (!busy.includes(hour)) await ctx.rollups.verified(request.branchId, [...versions.keys()], scope.rebuild);
  }
  const settledUntil = new Date(settledEnd).toISOString();
  const cleared = settled
    ? await ctx.rollups.repairs.clearSetAside(request.branchId, fromHour, settledUntil, request.keyId)
    : 0;
  return {
    branch_id: request.branchId,
    key_id: request.keyId ?? null,
    since: fromHour,
    until: hourAfter(toHour),
    records: sum(tally.records),
    items: tally.after.size,
    calls_before: sum(tally.before),
    calls_after: sum(tally.after),
    open_hours: open,
    busy_hours: [...new Set(busy)].sort(),
    set_aside_cleared: cleared,
  };
};

const sum = (values: Map<string, number>) => [...values.values()].reduce((a, b) => a + b, 0);

/**
 * The longest a stream record takes to reach the aggregator: locally (an endpoint set) 5 s, the
 * local lag target; deployed 60 s, the iterator-age alarm's threshold. `ROLLUP_MAX_LAG_SECONDS` overrides.
 */
export const maxLagSeconds = (env: Env) =>
  positiveIntEnv(env, 'ROLLUP_MAX_LAG_SECONDS', env.DYNAMODB_ENDPOINT?.trim() ? 5 : 60);
