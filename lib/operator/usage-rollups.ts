/**
 * Usage at scale, the operator side (docs/usage-rollups.md): summaries read from the rollups only,
 * a rebuild of the rollups from raw records, and the replay of usage records whose write failed.
 */
import { readFile } from 'node:fs/promises';
import { readRollupRetentionDays, readUsageRetentionDays } from '../../shared/lambda/config';
import {
  DEFAULT_ROLLUP_RETENTION_DAYS,
  hourOf,
  totalsOf,
  type HourRollup,
  type Totals,
} from '../../shared/domain/rollups';
import type { UsageRecord } from '../../shared/data/repositories/usage';
import { UsageRecordSchema } from '../../shared/lambda/usage-stream';
import type { OperatorContext } from './context';
import { OperatorError, parseIsoDate, requireBranch, requireKeyOfBranch } from './operations';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** A summary period with no `--since` reaches back this far. */
export const DEFAULT_SUMMARY_DAYS = 7;

type Env = Record<string, string | undefined>;
const rollupRetentionDays = readRollupRetentionDays;
const usageRetentionDays = readUsageRetentionDays;

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
  const until = request.until === undefined ? now : parseIsoDate(request.until, '--until');
  const since =
    request.since === undefined
      ? new Date(until.getTime() - defaultDays * DAY_MS)
      : parseIsoDate(request.since, '--since');
  if (until.getTime() <= since.getTime()) {
    throw new OperatorError(`--until (${until.toISOString()}) must be after --since (${since.toISOString()})`);
  }
  if (until.getTime() - since.getTime() > maxDays * DAY_MS) {
    throw new OperatorError(`The period may span at most ${maxDays} days (${kept})`);
  }
  return { since, until };
};

/** The hours a period touches: from the hour of `since` to the hour before `until` (exclusive). */
const hourRange = ({ since, until }: Period) => ({
  fromHour: hourOf(since),
  toHour: hourOf(until.getTime() - 1),
});

export type SummaryGranularity = 'hour' | 'day';

export interface UsageSummaryRequest {
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

export interface UsageBucket {
  /** Start of the hour or UTC day. */
  start: string;
  calls: number;
  by_status_class: Record<string, number>;
  p50_ms: number | null;
  p95_ms: number | null;
  p99_ms: number | null;
}

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
}

const bucketStart = (hour: string, by: SummaryGranularity) =>
  by === 'hour' ? hour : `${hour.slice(0, 10)}T00:00:00.000Z`;

/** Totals and one bucket per hour or day of a branch's (or one key's) calls, from the rollups only. */
export const summarizeUsage = async (
  ctx: OperatorContext,
  request: UsageSummaryRequest,
): Promise<UsageRollupSummary> => {
  const by = request.by ?? 'day';
  if (by !== 'hour' && by !== 'day') throw new OperatorError(`--by must be hour or day; got "${String(by)}"`);
  const period = parsePeriod(request, {
    ...(request.now ? { now: request.now } : {}),
    maxDays: rollupRetentionDays(request.env ?? process.env),
  });
  await requireBranch(ctx, request.branchId);
  if (request.keyId !== undefined) await requireKeyOfBranch(ctx, request.branchId, request.keyId);
  const { fromHour, toHour } = hourRange(period);
  const hours = await ctx.rollups.hours({
    branchId: request.branchId,
    fromHour,
    toHour,
    ...(request.keyId !== undefined ? { keyId: request.keyId } : {}),
  });
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
    until: new Date(Date.parse(toHour) + HOUR_MS).toISOString(),
    by,
    totals: totalsOf(hours),
    buckets: [...grouped.entries()].map(([start, items]) => {
      const { calls, by_status_class, p50_ms, p95_ms, p99_ms } = totalsOf(items);
      return { start, calls, by_status_class, p50_ms, p95_ms, p99_ms };
    }),
    items_read: hours.length,
  };
};

export interface RebuildRequest {
  branchId: string;
  since: string;
  until?: string;
  now?: Date;
  env?: Env;
  /** Called after each page with the records read so far (the CLI's progress line). */
  onProgress?: (recordsRead: number) => void;
}

export interface RebuildResult {
  branch_id: string;
  since: string;
  until: string;
  /** Raw usage records read. */
  records: number;
  /** Calls the rollups were missing, now counted. */
  added: number;
  /** Calls the rollups already counted (left as they were). */
  already_counted: number;
}

const REBUILD_PAGE = 1000;

/**
 * Recomputes a branch's rollups from its raw usage records: each record goes through the same
 * idempotent apply as the live aggregator, so a call already counted (by the aggregator, before
 * or during the rebuild) is never counted twice, and one that was missed is added.
 */
export const rebuildRollups = async (ctx: OperatorContext, request: RebuildRequest): Promise<RebuildResult> => {
  const env = request.env ?? process.env;
  const period = parsePeriod(request, {
    ...(request.now ? { now: request.now } : {}),
    maxDays: usageRetentionDays(env),
    kept: 'how long raw usage records are kept',
  });
  await requireBranch(ctx, request.branchId);
  const retentionDays = rollupRetentionDays(env);
  const result: RebuildResult = {
    branch_id: request.branchId,
    since: period.since.toISOString(),
    until: period.until.toISOString(),
    records: 0,
    added: 0,
    already_counted: 0,
  };
  const until = period.until.toISOString();
  let position: string | undefined;
  do {
    const page = await ctx.usage.query({
      branchId: request.branchId,
      since: period.since,
      limit: REBUILD_PAGE,
      ...(position ? { position } : {}),
    });
    const inPeriod = page.records.filter((record) => record.timestamp < until);
    result.records += inPeriod.length;
    const { applied, duplicates } = await ctx.rollups.apply(inPeriod, retentionDays);
    result.added += applied;
    result.already_counted += duplicates;
    request.onProgress?.(result.records);
    position = page.nextPosition;
  } while (position);
  return result;
};

export const USAGE_NOT_STORED_MESSAGE = 'Usage record not stored';

export interface ReplayResult {
  file: string;
  lines: number;
  /** Usage records found in error-level "Usage record not stored" lines. */
  found: number;
  /** Written back (a record stored before is written again, unchanged). */
  stored: number;
  /** Line numbers of "not stored" entries whose record is not a valid usage record. */
  invalid_lines: number[];
}

/** A JSON log line, alone or after a CloudWatch prefix (`<time>\t<request id>\t{...}`). */
const parseLogLine = (line: string): Record<string, unknown> | undefined => {
  const start = line.indexOf('{');
  if (start === -1) return undefined;
  try {
    const parsed: unknown = JSON.parse(line.slice(start));
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
};

/** The usage records a log holds because their write failed (shared/api/middlewares/record-usage.ts). */
export const failedUsageRecords = (text: string) => {
  const records: UsageRecord[] = [];
  const invalidLines: number[] = [];
  const lines = text.split('\n');
  lines.forEach((line, index) => {
    const entry = parseLogLine(line);
    if (!entry || entry.message !== USAGE_NOT_STORED_MESSAGE || String(entry.level).toUpperCase() !== 'ERROR') return;
    const parsed = UsageRecordSchema.safeParse(entry.usage_record);
    if (parsed.success) records.push(parsed.data);
    else invalidLines.push(index + 1);
  });
  return { records, invalidLines, lines: lines.filter(Boolean).length };
};

/**
 * Writes back the usage records of a log whose write failed. Idempotent: a record's key is its
 * time and request id, so replaying twice stores each once (and the aggregator counts it once).
 */
export const replayUsageLog = async (
  ctx: OperatorContext,
  file: string,
  env: Env = process.env,
  onProgress?: (stored: number, total: number) => void,
) => {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new OperatorError(`Cannot read log file ${file}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  const { records, invalidLines, lines } = failedUsageRecords(text);
  const retentionDays = usageRetentionDays(env);
  for (const [index, record] of records.entries()) {
    await ctx.usage.put(record, retentionDays);
    onProgress?.(index + 1, records.length);
  }
  const result: ReplayResult = {
    file,
    lines,
    found: records.length,
    stored: records.length,
    invalid_lines: invalidLines,
  };
  return result;
};
