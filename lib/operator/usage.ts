/**
 * The usage log of a branch (or one key), as `usage` shows it: the newest records, and a summary
 * of every call in the period. Summaries from the rollups are in usage-rollups.ts.
 */
import { bucketOf, histogramPercentile, RESPONSE_TIME_BOUNDS_MS } from '../../shared/domain/rollups';
import type { UsageRecord } from '../../shared/domain/usage-record';
import type { OperatorContext } from './context';
import { checkLimit } from './errors';
import { parseIsoDate } from './input';
import { requireBranch } from './keys';
import { MAX_USAGE_LIMIT } from './limits';

export interface UsageRequest {
  branchId: string;
  keyId?: string;
  since?: string;
  /** How many records, newest first. @default 50 */
  limit?: number;
}

export interface UsageSummary {
  /** Every call in the period (`--since` to now; all kept records without it), not only those shown. */
  count: number;
  by_status: Record<string, number>;
  p50_ms: number | null;
  p95_ms: number | null;
  /** False when the period held more than MAX_SUMMARY_CALLS calls: the figures cover the newest ones. */
  complete: boolean;
}

/**
 * p50 and p95 of response times counted from raw records, by the rollups' rule: the bound of the
 * histogram bucket holding each (docs/decisions.md "Percentiles"), so every view says the same.
 */
export const percentilesOf = (times: Iterable<number>): { p50_ms: number | null; p95_ms: number | null } => {
  const histogram = new Array<number>(RESPONSE_TIME_BOUNDS_MS.length + 1).fill(0);
  for (const ms of times) histogram[bucketOf(ms)]! += 1;
  return { p50_ms: histogramPercentile(histogram, 50), p95_ms: histogramPercentile(histogram, 95) };
};

export const summarize = (
  records: readonly Pick<UsageRecord, 'status' | 'response_time_ms'>[],
  complete = true,
): UsageSummary => {
  const byStatus: Record<string, number> = {};
  for (const record of records) byStatus[record.status] = (byStatus[record.status] ?? 0) + 1;
  return {
    count: records.length,
    by_status: byStatus,
    ...percentilesOf(records.map((record) => record.response_time_ms)),
    complete,
  };
};

/** Most calls the summary of `usage` reads (status and time only): about 100 pages of the usage table. */
export const MAX_SUMMARY_CALLS = 200_000;

/**
 * The newest usage records of a branch (or one of its keys), and a summary of every call in the
 * period, not only of the records shown (bounded by `maxSummaryCalls`).
 */
export const readUsage = async (
  ctx: OperatorContext,
  request: UsageRequest,
  maxSummaryCalls: number = MAX_SUMMARY_CALLS,
) => {
  const limit = checkLimit(request.limit ?? 50, MAX_USAGE_LIMIT);
  const since = request.since === undefined ? undefined : parseIsoDate(request.since, 'since');
  await requireBranch(ctx, request.branchId, request.keyId);
  const scope = { branchId: request.branchId, keyId: request.keyId, since };
  const records: UsageRecord[] = [];
  let position: string | undefined;
  do {
    const page = await ctx.usage.query({
      ...scope,
      limit: Math.min(1000, limit - records.length),
      position,
    });
    records.push(...page.records);
    position = page.nextPosition;
  } while (position && records.length < limit);
  const stats = await ctx.usage.callStats(scope, maxSummaryCalls);
  return { records, summary: summarize(stats.calls, stats.complete) };
};
