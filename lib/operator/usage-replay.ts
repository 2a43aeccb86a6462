/**
 * `usage replay <log file>`: writes back the usage records a log holds because their write
 * failed (shared/api/middlewares/record-usage.ts logs them whole). The file is read line by
 * line, 100 records at a time: memory stays flat whatever its size. Each record goes only into
 * the branch and key it names, once that key is known to belong to that branch; records
 * already stored are left alone, so a second run (or a run resumed after a failure) writes
 * nothing twice and the stream carries each call once (docs/usage-rollups.md "Replay").
 */
import { createReadStream } from 'node:fs';
import { access } from 'node:fs/promises';
import { isIP } from 'node:net';
import { routeKey, routes } from '../../shared/api/routes';
import type { UsageRecord } from '../../shared/domain/usage-record';
import { UsageRecordSchema } from '../../shared/domain/usage-record-schema';
import { DataStoreError } from '../../shared/data/data-store-errors';
import type { OperatorContext } from './context';
import { invalidInput, OperatorError } from './errors';
import { usageRetentionDays, type Env } from './usage-rollups';

export const USAGE_NOT_STORED_MESSAGE = 'Usage record not stored';
/** Records checked and written together: one BatchGetItem, four BatchWriteItems. */
export const REPLAY_BATCH = 100;

export interface ReplayResult {
  file: string;
  /** Lines read (from `from_line`). */
  lines: number;
  from_line: number;
  /** Usage records found in error-level "Usage record not stored" lines. */
  found: number;
  /** Records written. */
  stored: number;
  /** Stored already: left alone, so the stream carries each call once. */
  already_stored: number;
  /**
   * Lines reported and skipped: a record that is not valid, or whose key is unknown or of another
   * branch. The first MAX_SKIPS_LISTED are listed; `skipped_count` counts them all.
   */
  skipped: { line: number; reason: string }[];
  skipped_count: number;
}

export const MAX_SKIPS_LISTED = 1000;
const KEY_CACHE_LIMIT = 10_000;
const skip = (result: ReplayResult, entry: ReplayResult['skipped'][number]) => {
  result.skipped_count += 1;
  if (result.skipped.length < MAX_SKIPS_LISTED) result.skipped.push(entry);
};

export interface ReplayOptions {
  /** First line to read (1-based): resume where a run stopped. @default 1 */
  fromLine?: number;
  env?: Env;
  /** Called after each batch. */
  onProgress?: (progress: { lines: number; found: number; stored: number }) => void;
  /** The clock a record's time is checked against. @default the time of the call */
  now?: Date;
}

/**
 * The lines of a stream, read a chunk at a time; a line longer than `maxBytes` comes out as
 * undefined, without ever being held whole (a file of one 600 MB line is read in flat memory).
 */
export async function* boundedLines(input: AsyncIterable<Buffer>, maxBytes: number) {
  let parts: Buffer[] = [];
  let size = 0;
  const line = () => (size > maxBytes ? undefined : Buffer.concat(parts).toString('utf8').replace(/\r$/, ''));
  const keep = (piece: Buffer) => {
    size += piece.length;
    if (size > maxBytes) parts = [];
    else parts.push(piece);
  };
  for await (const chunk of input) {
    let start = 0;
    for (let end = chunk.indexOf(10); end !== -1; end = chunk.indexOf(10, start)) {
      keep(chunk.subarray(start, end));
      yield line();
      [parts, size, start] = [[], 0, end + 1];
    }
    keep(chunk.subarray(start));
  }
  if (size > 0) yield line();
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

/**
 * How far past this machine's clock a record's time may be: the function's clock and this one's
 * differ a little, never by more.
 */
export const MAX_CLOCK_SKEW_MS = 5 * 60_000;
/** The bounds of what a call can have recorded (docs/usage-rollups.md "Replay"). */
export const RECORD_BOUNDS = { path: 2048, id: 64, ip: 45 } as const;
/**
 * The longest log line read: a "not stored" entry (a record within the bounds above, its error
 * and a CloudWatch prefix) is a few KB. A longer line is skipped unread, whatever its length.
 */
export const MAX_LINE_BYTES = 64 * 1024;
/** The method of each route the API has: a record of any other route did not come from it. */
const METHOD_OF_ROUTE = new Map(routes.map((route) => [routeKey(route), route.method as string]));

/** Why a well-formed record cannot be one the API wrote, or undefined when it can. */
const impossibility = (record: UsageRecord, now: Date): string | undefined => {
  const ahead = Date.parse(record.timestamp) - now.getTime();
  if (ahead > MAX_CLOCK_SKEW_MS) return `timestamped ${record.timestamp}, in the future`;
  for (const field of ['key_id', 'branch_id', 'request_id'] as const) {
    if (record[field].length > RECORD_BOUNDS.id) return `${field} longer than ${RECORD_BOUNDS.id} characters`;
  }
  const method = METHOD_OF_ROUTE.get(record.route);
  // The route is never shown: one sent whole could be any size.
  if (method === undefined) return 'a route the API does not have';
  if (record.method !== method) return `method ${record.method.slice(0, 16)} on a ${method} route`;
  if (record.path.length > RECORD_BOUNDS.path || !record.path.startsWith('/')) {
    return `path not one of at most ${RECORD_BOUNDS.path} characters starting with /`;
  }
  const ip = record.source_ip;
  // API Gateway's source IP never has a zone id (`%eth0`): one of any size is refused.
  if (ip !== undefined && (ip.length > RECORD_BOUNDS.ip || ip.includes('%') || isIP(ip) === 0)) {
    return `source_ip not an IPv4 or IPv6 address of at most ${RECORD_BOUNDS.ip} characters`;
  }
  return undefined;
};

/**
 * What one line holds: nothing to replay (any other log line), a record, or a reason it is bad
 * (a "not stored" entry whose record is not a usage record, or one that cannot have happened: in
 * the future, of a route the API does not have, or past a field's bounds; or such a line cut short).
 */
export const readLogLine = (line: string, now = new Date()): UsageRecord | string | undefined => {
  const entry = parseLogLine(line);
  if (!entry) return line.includes(USAGE_NOT_STORED_MESSAGE) ? 'not a JSON log entry' : undefined;
  if (entry.message !== USAGE_NOT_STORED_MESSAGE || String(entry.level).toUpperCase() !== 'ERROR') return undefined;
  const parsed = UsageRecordSchema.safeParse(entry.usage_record);
  if (!parsed.success) {
    const fields = new Set(parsed.error.issues.map((issue) => issue.path.join('.') || 'record'));
    return `not a valid usage record (${[...fields].join(', ')})`;
  }
  const impossible = impossibility(parsed.data, now);
  return impossible ? `cannot have happened: ${impossible}` : parsed.data;
};

/** A replay under way: its result so far, the usage retention, key id → its branch (null: unknown). */
interface Replay {
  result: ReplayResult;
  retentionDays: number;
  /** Kept across batches; bounded here. */
  keyBranches: Map<string, string | null>;
}

/**
 * Stores one batch, each record in its write shard: only records of keys that exist in the branch
 * they name, within the usage retention, and not stored already.
 */
const storeBatch = async (
  ctx: OperatorContext,
  batch: readonly { line: number; record: UsageRecord }[],
  { result, retentionDays, keyBranches }: Replay,
): Promise<void> => {
  const accepted: UsageRecord[] = [];
  const keptSince = new Date(Date.now() - retentionDays * 86_400_000).toISOString();
  for (const { line, record } of batch) {
    if (record.timestamp < keptSince) {
      // Stored again, it would be a new insert of a call the rollups already counted.
      skip(result, { line, reason: `older than usage records are kept (${retentionDays} days)` });
      continue;
    }
    if (!keyBranches.has(record.key_id)) {
      // A cache of the keys seen, bounded: a file naming more keys than that looks them up again.
      if (keyBranches.size >= KEY_CACHE_LIMIT) keyBranches.clear();
      keyBranches.set(record.key_id, (await ctx.keys.getById(record.key_id))?.branch_id ?? null);
    }
    const owner = keyBranches.get(record.key_id);
    if (owner === record.branch_id) accepted.push(record);
    else skip(result, { line, reason: owner ? 'the key belongs to another branch' : 'unknown key' });
  }
  const stored = await ctx.usage.storedAlready(accepted);
  const fresh = [...new Map(accepted.filter((r) => !stored.has(r.request_id)).map((r) => [r.request_id, r])).values()];
  const lineOf = new Map(batch.map(({ line, record }) => [record, line]));
  let refused = 0;
  // Four BatchWriteItems of 25 in flight at once (each retries its own unprocessed items). One the
  // store refuses is written a record at a time: only the records it refuses are skipped.
  const write = async (records: UsageRecord[]) => {
    try {
      return await ctx.usage.putBatch(records, retentionDays);
    } catch (error) {
      if (!(error instanceof DataStoreError)) throw error;
    }
    for (const record of records) {
      await ctx.usage.put(record, retentionDays).catch((error: unknown) => {
        if (!(error instanceof DataStoreError)) throw error;
        refused += 1;
        skip(result, { line: lineOf.get(record)!, reason: `the data store refused it (${error.message})` });
      });
    }
  };
  await Promise.all(
    Array.from({ length: Math.ceil(fresh.length / 25) }, (_, i) => write(fresh.slice(i * 25, i * 25 + 25))),
  );
  result.stored += fresh.length - refused;
  result.already_stored += accepted.length - fresh.length;
};

export const replayUsageLog = async (
  ctx: OperatorContext,
  file: string,
  { fromLine = 1, env = process.env, onProgress, now = new Date() }: ReplayOptions = {},
): Promise<ReplayResult> => {
  if (!Number.isInteger(fromLine) || fromLine < 1) throw invalidInput('from_line', ' must be a whole number from 1');
  await access(file).catch((error: NodeJS.ErrnoException) => {
    throw new OperatorError(`Cannot read log file ${file}: ${error.code ?? 'error'}`);
  });
  const result: ReplayResult = {
    file,
    lines: 0,
    from_line: fromLine,
    found: 0,
    stored: 0,
    already_stored: 0,
    skipped: [],
    skipped_count: 0,
  };
  const replay: Replay = { result, retentionDays: usageRetentionDays(env), keyBranches: new Map() };
  let batch: { line: number; record: UsageRecord }[] = [];
  const flush = async () => {
    await storeBatch(ctx, batch, replay);
    batch = [];
    onProgress?.({ lines: result.lines, found: result.found, stored: result.stored });
  };
  let number = 0;
  for await (const line of boundedLines(createReadStream(file), MAX_LINE_BYTES)) {
    number += 1;
    if (number < fromLine) continue;
    result.lines += 1;
    const read = line === undefined ? `longer than ${MAX_LINE_BYTES} bytes` : readLogLine(line, now);
    if (typeof read === 'string') skip(result, { line: number, reason: read });
    else if (read) {
      result.found += 1;
      batch.push({ line: number, record: read });
      if (batch.length >= REPLAY_BATCH) await flush();
    }
  }
  if (batch.length > 0) await flush();
  result.skipped.sort((a, b) => a.line - b.line);
  return result;
};
