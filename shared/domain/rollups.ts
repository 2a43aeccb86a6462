/**
 * Usage rollups, the model (docs/decisions.md "Usage rollups"): what one call contributes to its
 * branch × key × hour item, and how items read back into totals, status classes, top routes and
 * percentiles. No I/O here: the aggregator, the operator library and the tests share it.
 */
import { createHash } from 'node:crypto';
import { nearestRank } from './percentile';
import type { UsageRecord } from './usage-record';

/**
 * Upper bounds (inclusive, ms) of the response-time histogram buckets; a last bucket holds
 * everything slower. A percentile is reported as the upper bound of the bucket that holds it, so
 * these bounds are the precision of p50/p95/p99 (docs/usage-rollups.md).
 */
export const RESPONSE_TIME_BOUNDS_MS = [
  1, 2, 3, 5, 7, 10, 15, 20, 30, 50, 75, 100, 150, 200, 300, 500, 750, 1000, 1500, 2000, 3000, 5000, 10000,
] as const;

export const DEFAULT_ROLLUP_RETENTION_DAYS = 400;
const HOUR_MS = 3_600_000;

/** Index of the histogram bucket of a response time. */
export const bucketOf = (ms: number): number => {
  const index = RESPONSE_TIME_BOUNDS_MS.findIndex((bound) => ms <= bound);
  return index === -1 ? RESPONSE_TIME_BOUNDS_MS.length : index;
};

/** The start of the UTC hour of a time, as ISO 8601 (`2027-01-31T23:00:00.000Z`). */
export const hourOf = (time: Date | string | number): string =>
  new Date(Math.floor(new Date(time).getTime() / HOUR_MS) * HOUR_MS).toISOString();

/** Sort key of a key's hour item: hour first, so a branch × period is one range of one partition. */
export const hourItemSk = (hour: string, keyId: string): string => `h#${hour}#${keyId}`;
export const HOUR_ITEM_PREFIX = 'h#';
export const lastUsedSk = (keyId: string): string => `last#${keyId}`;
export const LAST_USED_PREFIX = 'last#';

/**
 * A known key's call refused by a guard (revoked, expired, disabled: 401; IP or scope: 403; over
 * its limit: 429): not a use of the key, so it moves its last refusal, never its last use.
 */
export const isRefusal = (status: number): boolean => status === 401 || status === 403 || status === 429;

/** A key's last-use item: its newest accepted call, and its newest refused one with that call's status. */
export interface KeyUse {
  last_used_at?: string;
  last_refused_at?: string;
  last_refused_status?: number;
}

/**
 * Watermarks (docs/usage-rollups.md "Exactly once"): an hour item keeps, per stream source (the
 * stream and the usage partition key value its records came from), the highest stream sequence
 * number it has applied. Lambda delivers one partition key's records in sequence order, so a
 * record at or below the watermark was counted before. Sequence numbers are decimal strings of
 * up to ~40 digits: padded to one width they compare as text, in DynamoDB conditions too.
 */
export const WATERMARK_PREFIX = 'w:';
export const SEQUENCE_WIDTH = 40;

/** A stream sequence number, zero-padded so text order is numeric order; undefined when it is not one. */
export const padSequence = (sequence: string | undefined): string | undefined =>
  sequence !== undefined && /^\d{1,40}$/.test(sequence) ? sequence.padStart(SEQUENCE_WIDTH, '0') : undefined;

/** The short, stable name of a stream (its ARN is ~120 characters; 8 of a hash are enough to tell two apart). */
export const streamTag = (streamArn: string): string =>
  createHash('sha256').update(streamArn).digest('base64url').slice(0, 8);

/** The watermark attribute of a source: one per stream × usage partition key value feeding an item. */
export const watermarkName = (source: string): string => `${WATERMARK_PREFIX}${source}`;

/** The item a call is counted in: branch, key and hour. */
export const hourItemOf = (record: Pick<UsageRecord, 'branch_id' | 'key_id' | 'timestamp'>) => ({
  branchId: record.branch_id,
  keyId: record.key_id,
  hour: hourOf(record.timestamp),
});

/** A call as the stream delivered it: the record, where it came from and its place in that source's order. */
export interface StreamCall {
  record: UsageRecord;
  /** `<stream tag>|<usage partition key value>`. */
  source: string;
  /** Padded (padSequence). */
  sequence: string;
}

/** The calls of a group not yet applied: those past the watermark, without repeats. */
export const pastWatermark = (calls: readonly StreamCall[], watermark: string | undefined): StreamCall[] => {
  const unique = new Map<string, StreamCall>();
  for (const call of calls) if (watermark === undefined || call.sequence > watermark) unique.set(call.sequence, call);
  return [...unique.values()].sort((a, b) => (a.sequence < b.sequence ? -1 : a.sequence > b.sequence ? 1 : 0));
};

/** Attribute-name prefixes of the counters on an hour item. */
export const STATUS_PREFIX = 's:';
export const ROUTE_PREFIX = 'r:';
export const HISTOGRAM_PREFIX = 'h:';

/** The additive counters of a set of calls: attribute name → increment. */
export type Counters = Map<string, number>;

export const addCall = (counters: Counters, record: Pick<UsageRecord, 'status' | 'route' | 'response_time_ms'>) => {
  const add = (name: string, by: number) => counters.set(name, (counters.get(name) ?? 0) + by);
  add('calls', 1);
  add('ms_sum', record.response_time_ms);
  add(`${STATUS_PREFIX}${record.status}`, 1);
  add(`${ROUTE_PREFIX}${record.route}`, 1);
  add(`${HISTOGRAM_PREFIX}${bucketOf(record.response_time_ms)}`, 1);
};

/** One hour item as read back. */
export interface HourRollup {
  hour: string;
  keyId: string;
  calls: number;
  msSum: number;
  byStatus: Record<string, number>;
  byRoute: Record<string, number>;
  histogram: number[];
  /** A rebuild rewrote it and stopped before checking that no call it recounted was counted again. */
  unverified?: true;
}

export const toHourRollup = (item: Record<string, unknown>): HourRollup => {
  const rollup: HourRollup = {
    hour: String(item.hour),
    keyId: String(item.key_id),
    calls: Number(item.calls ?? 0),
    msSum: Number(item.ms_sum ?? 0),
    byStatus: {},
    byRoute: {},
    histogram: new Array<number>(RESPONSE_TIME_BOUNDS_MS.length + 1).fill(0),
    ...(item.unverified !== undefined ? { unverified: true } : {}),
  };
  for (const [name, value] of Object.entries(item)) {
    if (typeof value !== 'number') continue;
    if (name.startsWith(STATUS_PREFIX)) rollup.byStatus[name.slice(STATUS_PREFIX.length)] = value;
    else if (name.startsWith(ROUTE_PREFIX)) rollup.byRoute[name.slice(ROUTE_PREFIX.length)] = value;
    else if (name.startsWith(HISTOGRAM_PREFIX)) {
      const bucket = Number(name.slice(HISTOGRAM_PREFIX.length));
      if (bucket >= 0 && bucket < rollup.histogram.length) rollup.histogram[bucket] = value;
    }
  }
  return rollup;
};

export interface Totals {
  calls: number;
  /** `2xx`, `3xx`, `4xx`, `5xx`. */
  by_status_class: Record<string, number>;
  by_status: Record<string, number>;
  /** Busiest first. */
  top_routes: { route: string; calls: number }[];
  mean_ms: number | null;
  /** Upper bound of the histogram bucket holding the percentile; null with no calls. */
  p50_ms: number | null;
  p95_ms: number | null;
  p99_ms: number | null;
}

/** A percentile read from the histogram: the upper bound of the bucket holding its rank. */
export const histogramPercentile = (histogram: readonly number[], p: number): number | null => {
  const total = histogram.reduce((sum, n) => sum + n, 0);
  if (total === 0) return null;
  const rank = nearestRank(p, total);
  let seen = 0;
  for (const [bucket, n] of histogram.entries()) {
    seen += n;
    // The overflow bucket has no upper bound: its lower bound is reported.
    if (seen >= rank) return RESPONSE_TIME_BOUNDS_MS[bucket] ?? RESPONSE_TIME_BOUNDS_MS.at(-1)!;
  }
  return null;
};

const addInto = (target: Record<string, number>, source: Record<string, number>) => {
  for (const [name, n] of Object.entries(source)) target[name] = (target[name] ?? 0) + n;
};

/** Totals of any set of hour items. */
export const totalsOf = (rollups: readonly HourRollup[], topRoutes = 10): Totals => {
  const byStatus: Record<string, number> = {};
  const byRoute: Record<string, number> = {};
  const histogram = new Array<number>(RESPONSE_TIME_BOUNDS_MS.length + 1).fill(0);
  let calls = 0;
  let msSum = 0;
  for (const rollup of rollups) {
    calls += rollup.calls;
    msSum += rollup.msSum;
    addInto(byStatus, rollup.byStatus);
    addInto(byRoute, rollup.byRoute);
    rollup.histogram.forEach((n, bucket) => (histogram[bucket]! += n));
  }
  const byClass: Record<string, number> = {};
  for (const [status, n] of Object.entries(byStatus)) addInto(byClass, { [`${status.slice(0, 1)}xx`]: n });
  return {
    calls,
    by_status_class: byClass,
    by_status: byStatus,
    top_routes: Object.entries(byRoute)
      .map(([route, n]) => ({ route, calls: n }))
      .sort((a, b) => b.calls - a.calls || a.route.localeCompare(b.route))
      .slice(0, topRoutes),
    mean_ms: calls === 0 ? null : Math.round((msSum / calls) * 100) / 100,
    p50_ms: histogramPercentile(histogram, 50),
    p95_ms: histogramPercentile(histogram, 95),
    p99_ms: histogramPercentile(histogram, 99),
  };
};
