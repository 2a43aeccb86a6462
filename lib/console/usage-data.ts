/**
 * What the "API usage" page shows, read through the operator library: the chart's series, the
 * log one page at a time, and every record the filters select (the CSV export).
 *
 * `loadUsageChart` is the one place the chart's figures come from: the hourly rollups
 * (lib/operator/usage-rollups.ts `summarizeUsage`), so its cost grows with hours × keys, never
 * with calls. Latencies are the rollups' histogram bounds (docs/usage-rollups.md).
 */
import type { UsageRecord } from '../../shared/data/repositories/usage';
import type { OperatorContext } from '../operator/context';
import { summarizeUsage, type SetAsideReport } from '../operator/usage-rollups';

export const STATUS_CLASSES = ['2xx', '3xx', '4xx', '5xx'] as const;
export type StatusClass = (typeof STATUS_CLASSES)[number];
export type Bucket = 'hour' | 'day';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

export const PERIODS = {
  '24h': { label: 'Last 24 hours', ms: DAY_MS, bucket: 'hour' },
  '7d': { label: 'Last 7 days', ms: 7 * DAY_MS, bucket: 'day' },
  '30d': { label: 'Last 30 days', ms: 30 * DAY_MS, bucket: 'day' },
} as const satisfies Record<string, { label: string; ms: number; bucket: Bucket }>;
export type Period = keyof typeof PERIODS;
export const DEFAULT_PERIOD: Period = '24h';

export interface UsageFilters {
  branchId: string;
  keyId?: string;
  period: Period;
  bucket: Bucket;
  now: Date;
}

export interface UsageChart {
  bucket: Bucket;
  /** Start of each bucket, ISO 8601 UTC. */
  starts: string[];
  counts: Record<StatusClass, number[]>;
  /** Calls the chart counts. */
  total: number;
  p50_ms: number | null;
  p95_ms: number | null;
  /** The newest call time the rollups include (docs/usage-rollups.md "Freshness"). */
  as_of: string | null;
  /** Calls set aside by the aggregator, with the command that repairs them. */
  set_aside: SetAsideReport | null;
}

export const statusClass = (status: number): StatusClass | undefined => {
  const cls = `${Math.floor(status / 100)}xx`;
  return (STATUS_CLASSES as readonly string[]).includes(cls) ? (cls as StatusClass) : undefined;
};

export const periodStart = (filters: Pick<UsageFilters, 'period' | 'now'>): Date =>
  new Date(filters.now.getTime() - PERIODS[filters.period].ms);

export const loadUsageChart = async (ctx: OperatorContext, filters: UsageFilters): Promise<UsageChart> => {
  const summary = await summarizeUsage(ctx, {
    branchId: filters.branchId,
    by: filters.bucket,
    since: periodStart(filters).toISOString(),
    until: filters.now.toISOString(),
    now: filters.now,
    ...(filters.keyId ? { keyId: filters.keyId } : {}),
  });
  const counts = Object.fromEntries(
    STATUS_CLASSES.map((cls) => [cls, summary.buckets.map((bucket) => bucket.by_status_class[cls] ?? 0)]),
  ) as Record<StatusClass, number[]>;
  return {
    bucket: filters.bucket,
    starts: summary.buckets.map((bucket) => bucket.start),
    counts,
    total: summary.totals.calls,
    p50_ms: summary.totals.p50_ms,
    p95_ms: summary.totals.p95_ms,
    as_of: summary.as_of,
    set_aside: summary.set_aside,
  };
};

export const LOG_PAGE_SIZE = 50;

/** One page of the log, newest first; `position` from the previous page's `nextPosition`. */
export const loadUsageLog = (ctx: OperatorContext, filters: UsageFilters, position?: string, limit = LOG_PAGE_SIZE) =>
  ctx.usage.query({
    branchId: filters.branchId,
    since: periodStart(filters),
    limit,
    ...(filters.keyId ? { keyId: filters.keyId } : {}),
    ...(position ? { position } : {}),
  });

/** Every record the filters select, newest first, a page at a time (for the CSV export). */
export async function* allUsageRecords(ctx: OperatorContext, filters: UsageFilters): AsyncGenerator<UsageRecord[]> {
  let position: string | undefined;
  do {
    const page = await loadUsageLog(ctx, filters, position, 1000);
    if (page.records.length > 0) yield page.records;
    position = page.nextPosition;
  } while (position);
}

export const CSV_COLUMNS = [
  'timestamp',
  'key_id',
  'method',
  'path',
  'route',
  'status',
  'response_time_ms',
  'request_id',
] as const satisfies readonly (keyof UsageRecord)[];

/**
 * One CSV field (RFC 4180 quoting). A cell a spreadsheet would run as a formula (=, +, -, @,
 * tab, CR first) gets a leading apostrophe: a recorded path is whatever a caller sent.
 */
export const csvField = (value: string | number): string => {
  let text = String(value);
  if (typeof value === 'string' && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
};

export const csvRow = (values: readonly (string | number)[]): string => `${values.map(csvField).join(',')}\r\n`;
