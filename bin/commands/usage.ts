/**
 * `branch-api usage`: the raw log with a summary of the period, and the subcommands over the
 * rollups (lib/operator/usage-rollups.ts; docs/usage-rollups.md): summary, rebuild, replay.
 */
import { Option, type Command } from 'commander';
import { OperatorError } from '../../lib/operator/errors';
import { formatTable, percentileText } from '../../lib/operator/format';
import { MAX_USAGE_LIMIT } from '../../lib/operator/limits';
import { withProgress } from '../../lib/operator/progress';
import { lines, terminal, type TerminalText } from '../../lib/operator/terminal';
import type { RebuildResult } from '../../lib/operator/usage-rebuild';
import type { ReplayResult } from '../../lib/operator/usage-replay';
import type { SetAsideReport, UsageRollupSummary } from '../../lib/operator/usage-rollups';
import { branchCommand, outputWidth, positiveInt, print, withContext, type JsonOption } from './kit';
import { usageTable } from './tables';

/** Counts by status or status class, in order: `200: 3, 404: 1`. */
const classes = (counts: Record<string, number>) =>
  Object.entries(counts)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, n]) => `${name}: ${n}`)
    .join(', ');

/** The warning every usage view prints while calls are set aside, with the command that repairs them. */
const formatSetAside = (report: SetAsideReport): TerminalText =>
  lines([
    terminal`Warning: ${report.complete ? '' : 'at least '}${report.count} call(s) from ${report.oldest} to ${report.newest} could not be aggregated and are not in these totals.`,
    terminal`Repair: ${report.repair}`,
  ]);

/** The warning a summary prints for hours a rebuild left unverified (at most 24 named), with the rebuild that checks them. */
const formatUnverified = ({ hours, repair }: NonNullable<UsageRollupSummary['unverified']>): TerminalText =>
  lines([
    terminal`Warning: ${hours.length} hour(s) are not verified (a rebuild stopped before checking them; they may count a call twice): ${hours.slice(0, 24).join(', ')}${hours.length > 24 ? ', …' : ''}`,
    terminal`Repair: ${repair}`,
  ]);

/** @param width the terminal's width: tables are cut to fit it (bin/commands/kit.ts outputWidth) */
const formatSummary = (summary: UsageRollupSummary, width?: number): TerminalText => {
  const { totals, by } = summary;
  return lines([
    terminal`Branch ${summary.branch_id}, ${summary.key_id ? `key ${summary.key_id}` : 'all keys'}, ${summary.since} to ${summary.until}`,
    terminal`As of ${summary.as_of ?? 'never (the aggregator has not applied any call yet)'}`,
    ...(summary.set_aside ? [formatSetAside(summary.set_aside)] : []),
    ...(summary.unverified ? [formatUnverified(summary.unverified)] : []),
    terminal`${totals.calls} call(s)${totals.calls ? ` — ${classes(totals.by_status_class)}` : ''}`,
    terminal`response time p50 ${percentileText(totals.p50_ms)}, p95 ${percentileText(totals.p95_ms)}, p99 ${percentileText(totals.p99_ms)}`,
    ...(totals.top_routes.length > 0
      ? [
          terminal``,
          formatTable(
            ['ROUTE', 'CALLS'],
            totals.top_routes.map((r) => [r.route, String(r.calls)]),
            width,
          ),
        ]
      : []),
    terminal``,
    formatTable(
      [by === 'hour' ? 'HOUR (UTC)' : 'DAY (UTC)', 'CALLS', '2XX', '3XX', '4XX', '5XX', 'P50', 'P95', 'P99'],
      summary.buckets.map((b) => [
        b.start.slice(0, by === 'hour' ? 13 : 10),
        String(b.calls),
        ...['2xx', '3xx', '4xx', '5xx'].map((c) => String(b.by_status_class[c] ?? 0)),
        ...[b.p50_ms, b.p95_ms, b.p99_ms].map(percentileText),
      ]),
      width,
    ),
    terminal``,
    terminal`(${summary.items_read} rollup item(s) read)`,
  ]);
};

type PeriodOptions = { branch: string; key?: string; since?: string; until?: string } & JsonOption;

const addUsageRollupCommands = (usage: Command): void => {
  const summary = 'Totals, status classes, top routes, p50/p95/p99 and one bucket per hour or day, from the rollups';
  branchCommand(usage, 'summary', summary)
    .option('--key <key_id>', 'only calls made with this key')
    .option('--since <iso8601>', 'start of the period (default: 7 days before --until)')
    .option('--until <iso8601>', 'end of the period, exclusive (default: now)')
    .addOption(new Option('--by <granularity>', 'one bucket per').choices(['hour', 'day']).default('day'))
    .action(
      withContext(async (ctx, options: PeriodOptions & { by: 'hour' | 'day' }) => {
        const { summarizeUsage } = await import('../../lib/operator/usage-rollups');
        const { branch: branchId, key: keyId, since, until, by } = options;
        const summary = await summarizeUsage(ctx, { branchId, keyId, since, until, by });
        print(summary, options, () => formatSummary(summary, outputWidth()));
      }),
    );

  branchCommand(usage, 'rebuild', 'Recount the rollups of a period from the raw usage records (never double counts)')
    .option('--key <key_id>', 'only the rollups of this key')
    .requiredOption('--since <iso8601>', 'start of the period')
    .option('--until <iso8601>', 'end of the period, exclusive (default: now)')
    .action(
      withContext(async (ctx, options: PeriodOptions & { since: string }) => {
        const { rebuildRollups } = await import('../../lib/operator/usage-rebuild');
        const { branch: branchId, key: keyId, since, until } = options;
        const result = await withProgress('Rebuilding rollups: hours', (update) =>
          rebuildRollups(ctx, { branchId, keyId, since, until, onProgress: (p) => update(p.hours, p.of) }),
        );
        print(result, options, () => formatRebuild(result));
        if (result.busy_hours.length > 0) process.exitCode = 1;
      }),
    );

  usage
    .command('replay')
    .description('Write back the usage records a log holds because their write failed (idempotent, resumable)')
    .argument('<log_file>', 'a file of JSON log lines ("Usage record not stored" at error level)')
    .option('--from-line <n>', 'start at this line (resume a run that stopped)', (v) => Number(v))
    .option('--json', 'JSON output')
    .action(
      withContext(async (ctx, file: string, options: { fromLine?: number } & JsonOption) => {
        const { replayUsageLog } = await import('../../lib/operator/usage-replay');
        const result = await withProgress('Replaying usage records: lines read', (update) =>
          replayUsageLog(ctx, file, { fromLine: options.fromLine, onProgress: (p) => update(p.lines) }),
        );
        print(result, options, () => formatReplay(result));
        if (result.skipped_count > 0) process.exitCode = 1;
      }),
    );
};

const formatRebuild = (result: RebuildResult): TerminalText =>
  lines([
    terminal`Rebuilt ${result.items} hour item(s) of branch ${result.branch_id}${result.key_id ? `, key ${result.key_id}` : ''} from ${result.since} to ${result.until}: ${result.records} record(s) counted; the rollups showed ${result.calls_before} call(s), now ${result.calls_after}`,
    ...(result.set_aside_cleared ? [terminal`${result.set_aside_cleared} set-aside call(s) are counted now`] : []),
    ...(result.open_hours.length
      ? [
          terminal`Not rebuilt (ended too recently; the aggregator may still be counting them): ${result.open_hours.join(', ')}`,
        ]
      : []),
    ...(result.busy_hours.length
      ? [terminal`Not rebuilt (the aggregator kept writing to them; run again): ${result.busy_hours.join(', ')}`]
      : []),
  ]);

const formatReplay = (result: ReplayResult): TerminalText =>
  lines([
    terminal`Replayed ${result.stored} usage record(s) from ${result.lines} log line(s) (${result.already_stored} stored already)`,
    ...result.skipped.map((s) => terminal`Skipped line ${s.line}: ${s.reason}`),
    ...(result.skipped_count > result.skipped.length
      ? [terminal`… and ${result.skipped_count - result.skipped.length} more skipped line(s)`]
      : []),
  ]);

interface UsageOptions extends JsonOption {
  branch?: string;
  key?: string;
  since?: string;
  limit: number;
}

export const addUsageCommands = (program: Command): void => {
  const usage = program
    .command('usage')
    .description("Show a branch's API usage log, newest first, with a summary of the period; or a subcommand")
    // Checked in the action: a required option here would be required by the subcommands too.
    .option('--branch <id>', 'branch id (required)')
    .option('--key <key_id>', 'only calls made with this key')
    .option('--since <iso8601>', 'only calls at or after this time')
    .option('--limit <n>', `how many records to show (1-${MAX_USAGE_LIMIT})`, positiveInt(MAX_USAGE_LIMIT), 50)
    .option('--json', 'JSON output')
    .action(
      withContext(async (ctx, options: UsageOptions) => {
        if (options.branch === undefined) {
          throw new OperatorError("required option '--branch <id>' not specified", 'invalid_input', 'branch');
        }
        const { readUsage } = await import('../../lib/operator/usage');
        const { setAsideReport } = await import('../../lib/operator/usage-rollups');
        const { branch: branchId, key: keyId, since, limit } = options;
        const { records, summary } = await readUsage(ctx, { branchId, keyId, since, limit });
        // Calls the rollups could not count yet (docs/usage-rollups.md "Failures"), with their repair.
        const setAside = await setAsideReport(ctx, options.branch);
        print({ summary, records, set_aside: setAside }, options, () => {
          const statuses = classes(summary.by_status);
          const period = options.since === undefined ? 'kept' : `since ${options.since}`;
          const head = lines([
            terminal`${summary.complete ? '' : 'at least '}${summary.count} call(s) ${period}${statuses ? ` — ${statuses}` : ''}`,
            terminal`response time p50 ${percentileText(summary.p50_ms)}, p95 ${percentileText(summary.p95_ms)}`,
            ...(setAside ? [formatSetAside(setAside)] : []),
            ...(records.length < summary.count ? [terminal`showing the newest ${records.length}`] : []),
          ]);
          if (records.length === 0) return head;
          const table = usageTable(records, { oneKey: options.key !== undefined, width: outputWidth() });
          return terminal`${head}\n\n${table}`;
        });
      }),
    );

  addUsageRollupCommands(usage);
};
