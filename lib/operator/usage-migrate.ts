/**
 * `usage migrate --from-table <old usage table>`: copies the records of the usage table before
 * write shards (#22) into today's, each into its shard, through the path replay uses
 * (usage-replay.ts storeUsageBatch: its key must belong to its branch, records stored already are
 * left alone). Then, with `rebuild`, recounts the copied period's rollups from the new table.
 *
 * Why the rebuild (docs/capacity.md "Migration from the unsharded table"): the old records were
 * counted in the rollups when they were written, and each copy is a new INSERT on the new table's
 * stream, from a partition key the old watermarks never saw: the aggregator counts it again. The
 * recount makes the copied hours exactly what the new table holds, whatever counted them before.
 */
import { hourOf } from '../../shared/domain/rollups';
import type { UsageRecord } from '../../shared/data/repositories/usage';
import { createGate } from '../../shared/data/repositories/usage-shards';
import { UsageRecordSchema } from '../../shared/lambda/usage-stream';
import type { OperatorContext } from './context';
import { OperatorError } from './errors';
import { LegacyUsageTable } from './usage-migrate-source';
import { maxLagSeconds, rebuildRollups, type RebuildResult } from './usage-rebuild';
import { MAX_SKIPS_LISTED, storeUsageBatch, type StoreTally } from './usage-replay';
import { usageRetentionDays, type Env } from './usage-rollups';

const HOUR_MS = 3_600_000;
/** Items per Scan page: one storeUsageBatch each (one BatchGetItem, four BatchWriteItems). */
const SCAN_PAGE = 100;
export const DEFAULT_SEGMENTS = 4;
/**
 * Branches rebuilt at once: each rebuild checks its rewrite after the longest lag (60 s deployed),
 * so one after another would take a minute per branch; together the waits overlap.
 */
const REBUILDS_AT_ONCE = 8;
export const MAX_SEGMENTS = 64;
/**
 * Records are copied only from hours that start at least this long after the retention cutoff:
 * the rebuild that follows refuses a period reaching past the retention, and an hour whose raw
 * records are expiring can't be recounted. Those records stay counted once, by the old stream.
 */
const RETENTION_MARGIN_MS = 2 * HOUR_MS;

export interface MigrateOptions {
  fromTable: string;
  /** Parallel Scan segments, 1 to MAX_SEGMENTS. @default DEFAULT_SEGMENTS */
  segments?: number;
  /** Scan and check everything, write nothing. */
  dryRun?: boolean;
  /** Recount the copied period's rollups afterwards (per branch, usage rebuild). */
  rebuild?: boolean;
  env?: Env;
  now?: Date;
  /**
   * How the rollup rebuild waits for the copies' stream records to reach the aggregator, and for
   * late ones after its rewrite. @default a timer of the longest lag (usage-rebuild.ts maxLagSeconds)
   */
  wait?: (ms: number) => Promise<void>;
  /** Passed to the rebuild (hours that ended less than this ago are left open). */
  settleSeconds?: number;
  /** After each page: records scanned so far, of the table's approximate count. */
  onProgress?: (progress: { scanned: number; total: number | undefined }) => void;
}

export interface MigrateSkip {
  request_id: string | null;
  reason: string;
}

/** The records of one branch within the retention (copied now or before): the period its rollups are rebuilt for. */
export interface MigratedBranch {
  branch_id: string;
  records: number;
  /** Whole hours, `until` exclusive. */
  since: string;
  until: string;
  rebuild_command: string;
}

export interface MigrateResult extends StoreTally {
  from_table: string;
  to_table: string;
  segments: number;
  dry_run: boolean;
  /** Items read from the old table. */
  scanned: number;
  /** Older than the retention (less a margin): not copied; the rollups counted them already. */
  past_retention: number;
  /** Not copied: not a usage record, an unknown key, a key of another branch. First MAX_SKIPS_LISTED listed. */
  skipped: MigrateSkip[];
  skipped_count: number;
  /** One entry per branch with records copied or stored already. */
  branches: MigratedBranch[];
  /** With `rebuild`: one result per branch (or why it could not be rebuilt); null without. */
  rebuilds: ({ branch_id: string } & ({ result: RebuildResult } | { error: string }))[] | null;
}

interface Entry {
  record: UsageRecord;
}

const checkSegments = (segments: number) => {
  if (!Number.isInteger(segments) || segments < 1 || segments > MAX_SEGMENTS) {
    throw new OperatorError(`--segments must be a whole number from 1 to ${MAX_SEGMENTS}`, 'invalid_input', 'segments');
  }
};

/** Per branch, the oldest and newest record kept: one entry per branch in the old table, never per record. */
type Periods = Map<string, { records: number; oldest: string; newest: string }>;

const notePeriod = (periods: Periods, record: UsageRecord) => {
  const period = periods.get(record.branch_id);
  if (!period) periods.set(record.branch_id, { records: 1, oldest: record.timestamp, newest: record.timestamp });
  else {
    period.records += 1;
    if (record.timestamp < period.oldest) period.oldest = record.timestamp;
    if (record.timestamp > period.newest) period.newest = record.timestamp;
  }
};

const branchesOf = (periods: Periods): MigratedBranch[] =>
  [...periods]
    .map(([branchId, period]) => {
      const since = hourOf(period.oldest);
      const until = new Date(Date.parse(hourOf(period.newest)) + HOUR_MS).toISOString();
      return {
        branch_id: branchId,
        records: period.records,
        since,
        until,
        rebuild_command: `branch-api usage rebuild --branch ${branchId} --since ${since} --until ${until}`,
      };
    })
    .sort((a, b) => a.branch_id.localeCompare(b.branch_id));

/** Copies the old table, page by page in each segment, the segments in parallel. */
const copyAll = async (
  ctx: OperatorContext,
  source: LegacyUsageTable,
  options: MigrateOptions,
  result: MigrateResult,
) => {
  const env = options.env ?? process.env;
  const retentionDays = usageRetentionDays(env);
  const now = options.now ?? new Date();
  const keptFrom = new Date(Date.parse(hourOf(now.getTime() - retentionDays * 86_400_000)) + RETENTION_MARGIN_MS);
  const keptFromIso = keptFrom.toISOString();
  const { itemCount } = await source.describe();
  const keyBranches = new Map<string, string | null>();
  const periods: Periods = new Map();
  const skip = (requestId: string | null, reason: string) => {
    result.skipped_count += 1;
    if (result.skipped.length < MAX_SKIPS_LISTED) result.skipped.push({ request_id: requestId, reason });
  };
  const copyPage = async (items: Record<string, unknown>[]) => {
    const batch: Entry[] = [];
    for (const item of items) {
      const parsed = UsageRecordSchema.safeParse(item);
      const requestId = typeof item.request_id === 'string' ? item.request_id : null;
      if (!parsed.success) {
        const fields = parsed.error.issues.map((issue) => issue.path.join('.') || 'record').join(', ');
        skip(requestId, `not a valid usage record (${fields})`);
      } else if (parsed.data.timestamp < keptFromIso) result.past_retention += 1;
      else batch.push({ record: parsed.data });
    }
    const kept = await storeUsageBatch(ctx, batch, {
      keyBranches,
      retentionDays,
      tally: result,
      skip: ({ record }, reason) => skip(record.request_id, reason),
      dryRun: result.dry_run,
    });
    for (const record of kept) notePeriod(periods, record);
    result.scanned += items.length;
    options.onProgress?.({ scanned: result.scanned, total: itemCount });
  };
  const copySegment = async (segment: number) => {
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await source.scanPage(segment, result.segments, SCAN_PAGE, startKey);
      await copyPage(page.items);
      startKey = page.next;
    } while (startKey);
  };
  await Promise.all(Array.from({ length: result.segments }, (_, segment) => copySegment(segment)));
  result.branches = branchesOf(periods);
};

/** Recounts each branch's copied period from the new table, once the copies have reached the aggregator. */
const rebuildAll = async (ctx: OperatorContext, options: MigrateOptions, branches: MigratedBranch[]) => {
  const env = options.env ?? process.env;
  const wait = options.wait ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  // The copies' INSERTs are on their way to the aggregator: a recount before they are applied
  // would be undone by them.
  await wait(maxLagSeconds(env) * 1000);
  const gate = createGate(REBUILDS_AT_ONCE);
  const rebuildOne = async (branch: MigratedBranch): Promise<NonNullable<MigrateResult['rebuilds']>[number]> => {
    try {
      const result = await rebuildRollups(ctx, {
        branchId: branch.branch_id,
        since: branch.since,
        until: branch.until,
        env,
        wait,
        ...(options.settleSeconds === undefined ? {} : { settleSeconds: options.settleSeconds }),
      });
      return { branch_id: branch.branch_id, result };
    } catch (error) {
      // A branch that no longer exists, say: the others are still rebuilt.
      if (!(error instanceof OperatorError)) throw error;
      return { branch_id: branch.branch_id, error: error.message };
    }
  };
  const rebuilds = await Promise.all(branches.map((branch) => gate(() => rebuildOne(branch))));
  return rebuilds;
};

export const migrateUsage = async (ctx: OperatorContext, options: MigrateOptions): Promise<MigrateResult> => {
  const segments = options.segments ?? DEFAULT_SEGMENTS;
  checkSegments(segments);
  const fromTable = options.fromTable.trim();
  if (!fromTable) throw new OperatorError('--from-table must name the old usage table', 'invalid_input', 'from_table');
  if (fromTable === ctx.tables.usage) {
    throw new OperatorError(`${fromTable} is the usage table itself`, 'invalid_input', 'from_table');
  }
  const result: MigrateResult = {
    from_table: fromTable,
    to_table: ctx.tables.usage,
    segments,
    dry_run: options.dryRun ?? false,
    scanned: 0,
    stored: 0,
    already_stored: 0,
    past_retention: 0,
    skipped: [],
    skipped_count: 0,
    branches: [],
    rebuilds: null,
  };
  await copyAll(ctx, new LegacyUsageTable(ctx.client, fromTable), options, result);
  if (options.rebuild && !result.dry_run) result.rebuilds = await rebuildAll(ctx, options, result.branches);
  return result;
};
