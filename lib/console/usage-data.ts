/**
 * What the "API usage" page shows, read through the operator library: the chart's series, the
 * log one page at a time, and every record the filters select (the CSV export).
 *
 * `loadUsageChart` is the one place the chart's figures come from: the hourly rollups
 * (lib/operator/usage-rollups.ts `summarizeUsage`), so its cost grows with hours × keys, never
 * with calls. The rollups count calls per key by status and by route, never both at once, so
 * with a status or route filter the figures are counted from the raw records the log and CSV
 * read, up to RAW_COUNT_LIMIT. Latencies are the rollups' histogram bounds (docs/usage-rollups.md).
 */
import { routeKey, routes } from '../../shared/api/routes';
import { hourOf } from '../../shared/domain/rollups';
import type { UsageRecord } from '../../shared/domain/usage-record';
import { positionAfter } from '../../shared/data/repositories/usage';
import type { OperatorContext } from '../operator/context';
import { percentilesOf } from '../operator/usage';
import { summarizeUsage, type SetAsideReport } from '../operator/usage-rollups';
import { showControls } from './layout';

export const STATUS_CLASSES = ['2xx', '3xx', '4xx', '5xx'] as const;
export type StatusClass = (typeof STATUS_CLASSES)[number];
/** What one bar of the chart counts, with its name in the filters. */
export const BUCKETS = { hour: 'Hour', day: 'Day' } as const;
export type Bucket = keyof typeof BUCKETS;

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

export const PERIODS = {
  '24h': { label: 'Last 24 hours', ms: DAY_MS, bucket: 'hour' },
  '7d': { label: 'Last 7 days', ms: 7 * DAY_MS, bucket: 'day' },
  '30d': { label: 'Last 30 days', ms: 30 * DAY_MS, bucket: 'day' },
} as const satisfies Record<string, { label: string; ms: number; bucket: Bucket }>;
export type Period = keyof typeof PERIODS;
export const DEFAULT_PERIOD: Period = '24h';

/** Route templates the log can be filtered by: the API's routes and the catch-all. */
export const ROUTE_CHOICES: readonly string[] = [...routes.map(routeKey), '$default'];

export interface UsageFilters {
  branchId: string;
  keyId?: string;
  /** A status class (`4xx`) or one status (`404`). */
  status?: string;
  /** A route template, one of ROUTE_CHOICES. */
  route?: string;
  period: Period;
  bucket: Bucket;
  now: Date;
}

export interface UsageChart {
  bucket: Bucket;
  /** Start of the period the chart counts (a whole hour), ISO 8601 UTC. */
  since: string;
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
  /** Where the figures were counted: the rollups, or the raw records (status or route filter). */
  counted_from: 'rollups' | 'records';
  /** Counted from records and stopped at RAW_COUNT_LIMIT: the figures are of the newest calls only. */
  truncated: boolean;
}

export const statusClass = (status: number): StatusClass | undefined => {
  const cls = `${Math.floor(status / 100)}xx`;
  return (STATUS_CLASSES as readonly string[]).includes(cls) ? (cls as StatusClass) : undefined;
};

/**
 * Where the period starts: on a whole hour, as the rollups count, so the chart's total, the log
 * and the CSV cover the same calls (docs/console.md "Usage").
 */
export const periodStart = (filters: Pick<UsageFilters, 'period' | 'now'>): Date => {
  const start = filters.now.getTime() - PERIODS[filters.period].ms;
  return new Date(start - (start % HOUR_MS));
};

export const isStatusFilter = (value: string): boolean => /^[1-5](xx|\d\d)$/.test(value);

/** Whether a record is one the status and route filters select. */
export const matchesCall = (record: UsageRecord, { status, route }: Pick<UsageFilters, 'status' | 'route'>): boolean =>
  (route === undefined || record.route === route) &&
  (status === undefined ||
    (status.endsWith('xx') ? statusClass(record.status) === status : record.status === Number(status)));

/** Raw records the chart reads at most when a status or route filter makes it count them. */
export const RAW_COUNT_LIMIT = 20_000;

export const loadUsageChart = async (
  ctx: OperatorContext,
  filters: UsageFilters,
  { rawCountLimit = RAW_COUNT_LIMIT } = {},
): Promise<UsageChart> => {
  const chart = await rollupChart(ctx, filters);
  return filters.status === undefined && filters.route === undefined
    ? chart
    : countRecords(ctx, filters, chart, rawCountLimit);
};

/**
 * The chart's figures counted from the records the filters select, in the rollups' buckets
 * (UTC hours or days) and latency bounds, so they mean what the unfiltered figures mean.
 */
const countRecords = async (
  ctx: OperatorContext,
  filters: UsageFilters,
  chart: UsageChart,
  limit: number,
): Promise<UsageChart> => {
  const index = new Map(chart.starts.map((start, i) => [start, i]));
  const counts = Object.fromEntries(
    STATUS_CLASSES.map((cls) => [cls, chart.starts.map(() => 0)]),
  ) as UsageChart['counts'];
  const times: number[] = [];
  let scanned = 0;
  let position: string | undefined;
  do {
    const page = await loadUsageLog(ctx, filters, position, {
      pageSize: 1000,
      scanLimit: Math.min(1000, limit - scanned),
    });
    scanned += page.scanned;
    for (const record of page.records) {
      const hour = hourOf(record.timestamp);
      const bucket = index.get(chart.bucket === 'hour' ? hour : `${hour.slice(0, 10)}T00:00:00.000Z`);
      const cls = statusClass(record.status);
      if (bucket === undefined || cls === undefined) continue;
      counts[cls][bucket]! += 1;
      times.push(record.response_time_ms);
    }
    position = page.nextPosition;
  } while (position && scanned < limit);
  return {
    ...chart,
    counts,
    total: times.length,
    ...percentilesOf(times),
    counted_from: 'records',
    truncated: position !== undefined,
  };
};

const rollupChart = async (ctx: OperatorContext, filters: UsageFilters): Promise<UsageChart> => {
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
    since: summary.since,
    starts: summary.buckets.map((bucket) => bucket.start),
    counts,
    total: summary.totals.calls,
    p50_ms: summary.totals.p50_ms,
    p95_ms: summary.totals.p95_ms,
    as_of: summary.as_of,
    set_aside: summary.set_aside,
    counted_from: 'rollups',
    truncated: false,
  };
};

export const LOG_PAGE_SIZE = 50;
/**
 * Records one log page reads at most while looking for calls the status and route filters
 * select, as the filtered figures do; past it the page shows what it found and links on to the
 * calls it has not searched yet.
 */
export const LOG_SCAN_LIMIT = RAW_COUNT_LIMIT;

/**
 * One page of the log, newest first: exactly `pageSize` calls the filters select while more
 * remain, and an older page (`nextPosition`) only when one more match was found (or the search
 * stopped at `scanLimit`: `searchStopped`), so a page never runs over and its older page is never
 * empty for want of matches; `scanned` counts the raw records read.
 */
export const loadUsageLog = async (
  ctx: OperatorContext,
  filters: UsageFilters,
  position?: string,
  { pageSize = LOG_PAGE_SIZE, scanLimit = LOG_SCAN_LIMIT } = {},
) => {
  const filtered = filters.status !== undefined || filters.route !== undefined;
  const records: UsageRecord[] = [];
  let scanned = 0;
  let next = position;
  do {
    const page = await ctx.usage.query({
      branchId: filters.branchId,
      since: periodStart(filters),
      // One more than the page, to know whether an older page has anything.
      limit: filtered ? Math.min(1000, scanLimit - scanned) : pageSize + 1 - records.length,
      ...(filters.keyId ? { keyId: filters.keyId } : {}),
      ...(next ? { position: next } : {}),
    });
    scanned += page.records.length;
    records.push(...page.records.filter((record) => matchesCall(record, filters)));
    next = page.nextPosition;
  } while (next && records.length <= pageSize && scanned < scanLimit);
  if (records.length > pageSize) {
    return {
      records: records.slice(0, pageSize),
      scanned,
      nextPosition: positionAfter(records[pageSize - 1]!),
      searchStopped: false,
    };
  }
  return { records, scanned, searchStopped: next !== undefined, ...(next ? { nextPosition: next } : {}) };
};

/** Every record the filters select, newest first, a page at a time (for the CSV export). */
export async function* allUsageRecords(ctx: OperatorContext, filters: UsageFilters): AsyncGenerator<UsageRecord[]> {
  let position: string | undefined;
  do {
    const page = await loadUsageLog(ctx, filters, position, { pageSize: 1000, scanLimit: 1000 });
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
  'source_ip',
] as const satisfies readonly (keyof UsageRecord)[];

/**
 * One CSV field (RFC 4180 quoting). A recorded path is whatever a caller sent, so: control
 * characters (NUL, terminal escapes) and bidi overrides are written as visible `\xNN` /
 * `\u{NNNN}` text, and a cell a spreadsheet would run as a formula (=, +, -, @, tab first) gets
 * a leading apostrophe.
 */
export const csvField = (value: string | number | undefined): string => {
  if (value === undefined) return '';
  let text = showControls(String(value));
  if (typeof value === 'string' && /^[=+\-@\t]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
};

export const csvRow = (values: readonly (string | number | undefined)[]): string =>
  `${values.map(csvField).join(',')}\r\n`;
