/** `branch-api usage` (the log and a summary of the period) and its rollup subcommands. */
import type { Command } from 'commander';
import { OperatorError } from '../../lib/operator/errors';
import { MAX_USAGE_LIMIT } from '../../lib/operator/limits';
import { lines, terminal } from '../../lib/operator/terminal';
import { addUsageRollupCommands, formatSetAside } from './usage-rollups';
import { kit, outputWidth, positiveInt, print, withContext, type JsonOption } from './kit';
import { usageTable } from './tables';

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
        const { records, summary } = await readUsage(ctx, {
          branchId: options.branch,
          limit: options.limit,
          ...(options.key !== undefined ? { keyId: options.key } : {}),
          ...(options.since !== undefined ? { since: options.since } : {}),
        });
        // Calls the rollups could not count yet (docs/usage-rollups.md "Failures"), with their repair.
        const setAside = await setAsideReport(ctx, options.branch);
        print({ summary, records, set_aside: setAside }, options, () => {
          const statuses = Object.entries(summary.by_status)
            .map(([status, count]) => `${status}: ${count}`)
            .join(', ');
          const period = options.since === undefined ? 'kept' : `since ${options.since}`;
          const head = lines([
            terminal`${summary.complete ? '' : 'at least '}${summary.count} call(s) ${period}${statuses ? ` — ${statuses}` : ''}`,
            terminal`response time p50 ${summary.p50_ms ?? '-'} ms, p95 ${summary.p95_ms ?? '-'} ms`,
            ...(setAside ? [formatSetAside(setAside)] : []),
            ...(records.length < summary.count ? [terminal`showing the newest ${records.length}`] : []),
          ]);
          if (records.length === 0) return head;
          const table = usageTable(records, { oneKey: options.key !== undefined, width: outputWidth() });
          return terminal`${head}\n\n${table}`;
        });
      }),
    );

  addUsageRollupCommands(usage, kit);
};
