/**
 * `branch-api usage migrate --from-table <old usage table>`: the usage records of the table
 * before write shards copied into today's, then (with --rebuild) the copied period's rollups
 * recounted (lib/operator/usage-migrate.ts; docs/capacity.md "Migration from the unsharded table").
 */
import { InvalidArgumentError, type Command } from 'commander';
import { withProgress } from '../../lib/operator/progress';
import { lines, terminal, type TerminalText } from '../../lib/operator/terminal';
import { LEGACY_LOCAL_USAGE_TABLE } from '../../lib/operator/usage-migrate-source';
import { DEFAULT_SEGMENTS, MAX_SEGMENTS, migrateUsage, type MigrateResult } from '../../lib/operator/usage-migrate';
import type { CommandKit } from './usage-rollups';

interface MigrateCommandOptions {
  fromTable: string;
  segments: number;
  dryRun?: boolean;
  rebuild?: boolean;
  json?: boolean;
}

const segmentCount = (value: string) => {
  if (!/^[1-9][0-9]*$/.test(value) || Number(value) > MAX_SEGMENTS) {
    throw new InvalidArgumentError(`must be a whole number from 1 to ${MAX_SEGMENTS}`);
  }
  return Number(value);
};

const formatRebuilds = (result: MigrateResult): TerminalText[] => {
  if (result.dry_run || result.branches.length === 0) return [];
  if (result.rebuilds === null) {
    return [
      terminal`The copies are counted again by the rollups until the copied period is rebuilt. Once the aggregator has caught up (deployed: IteratorAge under 60 s), run this command again with --rebuild, or:`,
      ...result.branches.map((branch) => terminal`  ${branch.rebuild_command}`),
    ];
  }
  return result.rebuilds.map((rebuild) => {
    if ('error' in rebuild) return terminal`Rollups of ${rebuild.branch_id} not rebuilt: ${rebuild.error}`;
    const { result: r } = rebuild;
    const open = r.open_hours.length ? terminal`; ${r.open_hours.length} hour(s) too recent, run again later` : '';
    const busy = r.busy_hours.length ? terminal`; ${r.busy_hours.length} hour(s) still moving, run again` : '';
    return terminal`Rollups of ${r.branch_id} rebuilt from ${r.since} to ${r.until}: ${r.calls_before} call(s) before, ${r.calls_after} now${open}${busy}`;
  });
};

export const formatMigrate = (result: MigrateResult): TerminalText =>
  lines([
    terminal`${result.dry_run ? 'Would copy' : 'Copied'} ${result.stored} usage record(s) from ${result.from_table} into ${result.to_table} (${result.scanned} scanned in ${result.segments} segment(s); ${result.already_stored} stored already, ${result.past_retention} past the retention)`,
    ...result.skipped.map((s) => terminal`Skipped ${s.request_id ?? '(no request id)'}: ${s.reason}`),
    ...(result.skipped_count > result.skipped.length
      ? [terminal`… and ${result.skipped_count - result.skipped.length} more skipped record(s)`]
      : []),
    ...formatRebuilds(result),
  ]);

/** Exit 1 when something was left for the operator: a skipped record, a branch or hours not rebuilt. */
const incomplete = (result: MigrateResult) =>
  result.skipped_count > 0 ||
  (result.rebuilds ?? []).some((r) => 'error' in r || r.result.busy_hours.length + r.result.open_hours.length > 0);

export const addUsageMigrateCommand = (usage: Command, { withContext, print }: CommandKit): void => {
  usage
    .command('migrate')
    .description(
      'Copy the usage records of the table before write shards into the sharded one (idempotent: run it again to resume)',
    )
    .requiredOption(
      '--from-table <name>',
      `the old usage table (a deployed stack's retained table; locally ${LEGACY_LOCAL_USAGE_TABLE})`,
    )
    .option('--segments <n>', `parallel Scan segments (1-${MAX_SEGMENTS})`, segmentCount, DEFAULT_SEGMENTS)
    .option('--dry-run', 'count what would be copied, write nothing')
    .option('--rebuild', 'then recount the rollups of the copied period, so copies are not counted twice')
    .option('--json', 'JSON output')
    .action(
      withContext(async (ctx, options: MigrateCommandOptions) => {
        const result = await withProgress('Migrating usage records: scanned', (update) =>
          migrateUsage(ctx, {
            fromTable: options.fromTable,
            segments: options.segments,
            dryRun: options.dryRun === true,
            rebuild: options.rebuild === true,
            onProgress: ({ scanned, total }) => update(scanned, total),
          }),
        );
        print(result, options, () => formatMigrate(result));
        if (incomplete(result)) process.exitCode = 1;
      }),
    );
};
