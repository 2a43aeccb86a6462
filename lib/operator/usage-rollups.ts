/**
 * Usage at scale, the operator side (docs/usage-rollups.md): summaries read from the rollups only,
 * a rebuild of the rollups from raw records, and the replay of usage records whose write failed.
 */
import { readRollupRetentionDays, readUsageRetentionDays } from '../../shared/config/env';
import {
  DEFAULT_ROLLUP_RETENTION_DAYS,
  hourOf,
  totalsOf,
  type HourRollup,
  type Totals,
} from '../../shared/domain/rollups';
import type { OperatorContext } from './context';
import { invalidInput, OperatorError } from './errors';
import { parseIsoDate } from './input';
import { requireBranch } from './keys';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** A summary period with no `--since` reaches back this far. */
export const DEFAULT_SUMMARY_DAYS = 7;

export type Env = Record<string, string | undefined>;
export const rollupRetentionDays = readRollupRetentionDays;
export const usageRetentionDays = readUsageRetentionDays;

export interface Period {
  since: Date;
  until: Date;
}

/** `--since` and `--until` checked: valid dates, in order, no longer than the rollups are kept. */
export const parsePeriod = (
  request: { since?: string; until?: string },
  {
    now = new Date(),
    defaultDays = DEFAULT_SUMMARY_DAYS,
    maxDays = DEFAULT_ROLLUP_RETENTION_DAYS,
    kept = "the rollups' retention",
  } = {},
): Period => {
  const until = request.until === undefined ? now : parseIsoDate(request.until, 'until');
  const since =
    request.since === undefined
      ? new Date(until.getTime() - defaultDays * DAY_MS)
      : parseIsoDate(request.since, 'since');
  if (until.getTime() <= since.getTime()) {
    throw invalidInput(
      'until',
      ` (${until.toISOString()}) must be after the start of the period (${since.toISOString()})`,
    );
  }
  if (until.getTime() - since.getTime() > maxDays * DAY_MS) {
    throw new OperatorError(`The period may span at most ${maxDays} days (${kept})`, 'invalid_input', 'since');
  }
  return { since, until };
};

/** The start of the hour after `hour`. */
export const hourAfter = (hour: string): string => new Date(Date.parse(hour) + HOUR_MS).toISOString();

/** The hours a period touches: from the hour of `since` to the hour before `until` (exclusive). */
export const hourRange = ({ since, until }: Period) => ({
  fromHour: hourOf(since),
  toHour: hourOf(until.getTime() - 1),
});

type SummaryGranularity = 'hour' | 'day';

interface UsageSummaryRequest {
  branchId: string;
  keyId?: string;
  since?: string;
  until?: string;
  /** @default 'day' */
  by?: SummaryGranularity;
  now?: Date;
  /** Where ROLLUP_RETENTION_DAYS is read (the longest period). @default process.env */
  env?: Env;
}

/** One hour or UTC day (`start`) of a summary: the totals of its calls. */
type UsageBucket = Pick<Totals, 'calls' | 'by_status_class' | 'p50_ms' | 'p95_ms' | 'p99_ms'> & { start: string };

export interface UsageRollupSummary {
  branch_id: string;
  key_id: string | null;
  /** Whole hours: the rollups' granularity. */
  since: string;
  until: string;
  by: SummaryGranularity;
  totals: Totals;
  buckets: UsageBucket[];
  /** Rollup items read: at most hours × keys, whatever the number of calls. */
  items_read: number;
  /** The newest call time the aggregator has fully applied (any branch); null before its first batch. */
  as_of: string | null;
  /** Calls of this branch the aggregator set aside, not in these totals until a rebuild repairs them. */
  set_aside: SetAsideReport | null;
  /** Hours a rebuild rewrote and stopped before checking (they may count a call twice), with their repair. */
  unverified: { hours: string[]; repair: string } | null;
}

export interface SetAsideReport {
  count: number;
  /** False when there are more than were read (the count is a lower bound). */
  complete: boolean;
  oldest: string;
  newest: string;
  /** The command that counts them. */
  repair: string;
}

/** The rebuild of a branch's hours from the hour of `first` to that of `last`, both included. */
const rebuildCommand = (branchId: string, first: string, last: string): string =>
  `branch-api usage rebuild --branch ${branchId} --since ${hourOf(first)} --until ${hourAfter(hourOf(last))}`;

/** Set-aside calls of a branch and the rebuild that repairs them; null when there are none. */
export const setAsideReport = async (ctx: OperatorContext, branchId: string): Promise<SetAsideReport | null> => {
  const { count, complete, oldest, newest } = await ctx.rollups.repairs.setAsideOf(branchId);
  if (count === 0 || !oldest || !newest) return null;
  return { count, complete, oldest, newest, repair: rebuildCommand(branchId, oldest, newest) };
};

/** The hours of these items a rebuild left unverified, and the rebuild that checks them; null when there are none. */
const unverifiedReport = (branchId: string, items: readonly HourRollup[]) => {
  const hours = [...new Set(items.filter((item) => item.unverified).map((item) => item.hour))].sort();
  return hours.length === 0 ? null : { hours, repair: rebuildCommand(branchId, hours[0]!, hours.at(-1)!) };
};

const bucketStart = (hour: string, by: SummaryGranularity) =>
  by === 'hour' ? hour : `${hour.slice(0, 10)}T00:00:00.000Z`;

/** Totals and one bucket per hour or day of a branch's (or one key's) calls, from the rollups only. */
export const summarizeUsage = async (
  ctx: OperatorContext,
  request: UsageSummaryRequest,
): Promise<UsageRollupSummary> => {
  const by = request.by ?? 'day';
  if (by !== 'hour' && by !== 'day') throw invalidInput('by', ` must be hour or day; got "${String(by)}"`);
  const period = parsePeriod(request, {
    ...(request.now ? { now: request.now } : {}),
    maxDays: rollupRetentionDays(request.env ?? process.env),
  });
  await requireBranch(ctx, request.branchId, request.keyId);
  const { fromHour, toHour } = hourRange(period);
  const hours = await ctx.rollups.hours({ branchId: request.branchId, keyId: request.keyId, fromHour, toHour });
  const grouped = new Map<string, HourRollup[]>();
  const step = by === 'hour' ? HOUR_MS : DAY_MS;
  // Every bucket of the period, empty ones included, so a chart has no gaps.
  for (let t = Date.parse(bucketStart(fromHour, by)); t <= Date.parse(toHour); t += step) {
    grouped.set(new Date(t).toISOString(), []);
  }
  for (const hour of hours) grouped.get(bucketStart(hour.hour, by))?.push(hour);
  return {
    branch_id: request.branchId,
    key_id: request.keyId ?? null,
    since: fromHour,
    until: hourAfter(toHour),
    by,
    totals: totalsOf(hours),
    buckets: [...grouped.entries()].map(([start, items]) => {
      const { calls, by_status_class, p50_ms, p95_ms, p99_ms } = totalsOf(items);
      return { start, calls, by_status_class, p50_ms, p95_ms, p99_ms };
    }),
    items_read: hours.length,
    as_of: (await ctx.rollups.progress()) ?? null,
    set_aside: await setAsideReport(ctx, request.branchId),
    unverified: unverifiedReport(request.branchId, hours),
  };
};
