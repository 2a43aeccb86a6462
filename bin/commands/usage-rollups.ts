/**
 * `branch-api usage summary | rebuild | replay`: usage at scale, over the rollups
 * (lib/operator/usage-rollups.ts; docs/usage-rollups.md). Added under the `usage` command, whose
 * own action (the raw log) keeps working.
 */
import { Option, type Command } from 'commander';
import type { OperatorContext } from '../../lib/operator/context';
import { formatTable } from '../../lib/operator/format';
import { withProgress } from '../../lib/operator/progress';
import { outputWidth } from './kit';
import { lines as joinLines, terminal, type TerminalText } from '../../lib/operator/terminal';
import {
  rebuildRollups,
  replayUsageLog,
  summarizeUsage,
  type UsageRollupSummary,
} from '../../lib/operator/usage-rollups';

interface JsonOption {
  json?: boolean;
}

export interface CommandKit {
  withContext: <Args extends unknown[]>(
    action: (ctx: OperatorContext, ...args: Args) => Promise<void>,
  ) => (...args: Args) => Promise<void>;
  print: (value: unknown, options: JsonOption, text: () => TerminalText) => void;
}

const ms = (value: number | null) => (value === null ? '-' : `≤${value}`);
const classes = (counts: Record<string, number>) =>
  Object.entries(counts)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, n]) => `${name}: ${n}`)
    .join(', ');

/** @param width the terminal's width: tables are cut to fit it (bin/commands/kit.ts outputWidth) */
export const formatSummary = (summary: UsageRollupSummary, width?: number): TerminalText => {
  const { totals } = summary;
  const lines: TerminalText[] = [
    terminal`Branch ${summary.branch_id}, ${summary.key_id ? `key ${summary.key_id}` : 'all keys'}, ${summary.since} to ${summary.until}`,
    terminal`${totals.calls} call(s)${totals.calls ? ` — ${classes(totals.by_status_class)}` : ''}`,
    terminal`response time p50 ${ms(totals.p50_ms)} ms, p95 ${ms(totals.p95_ms)} ms, p99 ${ms(totals.p99_ms)} ms`,
  ];
  if (totals.top_routes.length > 0) {
    lines.push(
      terminal``,
      formatTable(
        ['ROUTE', 'CALLS'],
        totals.top_routes.map((r) => [r.route, String(r.calls)]),
        width,
      ),
    );
  }
  lines.push(
    terminal``,
    formatTable(
      [summary.by === 'hour' ? 'HOUR' : 'DAY', 'CALLS', '2XX', '3XX', '4XX', '5XX', 'P50', 'P95', 'P99'],
      summary.buckets.map((b) => [
        summary.by === 'hour' ? b.start.slice(0, 13) : b.start.slice(0, 10),
        String(b.calls),
        ...['2xx', '3xx', '4xx', '5xx'].map((c) => String(b.by_status_class[c] ?? 0)),
        ms(b.p50_ms),
        ms(b.p95_ms),
        ms(b.p99_ms),
      ]),
      width,
    ),
    terminal``,
    terminal`(${summary.items_read} rollup item(s) read)`,
  );
  return joinLines(lines);
};

export const addUsageRollupCommands = (usage: Command, { withContext, print }: CommandKit): void => {
  usage
    .command('summary')
    .description('Totals, status classes, top routes, p50/p95/p99 and one bucket per hour or day, from the rollups')
    .requiredOption('--branch <id>', 'branch id')
    .option('--key <key_id>', 'only calls made with this key')
    .option('--since <iso8601>', 'start of the period (default: 7 days before --until)')
    .option('--until <iso8601>', 'end of the period, exclusive (default: now)')
    .addOption(new Option('--by <granularity>', 'one bucket per').choices(['hour', 'day']).default('day'))
    .option('--json', 'JSON output')
    .action(
      withContext(
        async (
          ctx,
          options: { branch: string; key?: string; since?: string; until?: string; by: 'hour' | 'day' } & JsonOption,
        ) => {
          const summary = await summarizeUsage(ctx, {
            branchId: options.branch,
            by: options.by,
            ...(options.key !== undefined ? { keyId: options.key } : {}),
            ...(options.since !== undefined ? { since: options.since } : {}),
            ...(options.until !== undefined ? { until: options.until } : {}),
          });
          print(summary, options, () => formatSummary(summary, outputWidth()));
        },
      ),
    );

  usage
    .command('rebuild')
    .description('Recompute the rollups of a period from the raw usage records (never double counts)')
    .requiredOption('--branch <id>', 'branch id')
    .requiredOption('--since <iso8601>', 'start of the period')
    .option('--until <iso8601>', 'end of the period, exclusive (default: now)')
    .option('--json', 'JSON output')
    .action(
      withContext(async (ctx, options: { branch: string; since: string; until?: string } & JsonOption) => {
        const result = await withProgress('Rebuilding rollups: records read', (onProgress) =>
          rebuildRollups(ctx, {
            branchId: options.branch,
            since: options.since,
            ...(options.until !== undefined ? { until: options.until } : {}),
            onProgress,
          }),
        );
        print(
          result,
          options,
          () =>
            terminal`Rebuilt the rollups of branch ${result.branch_id} from ${result.since} to ${result.until}: ${result.records} record(s) read, ${result.added} added, ${result.already_counted} already counted`,
        );
      }),
    );

  usage
    .command('replay')
    .description('Write back the usage records a log holds because their write failed (idempotent)')
    .argument('<log_file>', 'a file of JSON log lines ("Usage record not stored" at error level)')
    .option('--json', 'JSON output')
    .action(
      withContext(async (ctx, file: string, options: JsonOption) => {
        const result = await withProgress('Replaying usage records', (update) =>
          replayUsageLog(ctx, file, process.env, update),
        );
        print(result, options, () =>
          joinLines([
            terminal`Replayed ${result.stored} usage record(s) from ${result.lines} log line(s)`,
            ...(result.invalid_lines.length
              ? [terminal`Skipped invalid records on line(s) ${result.invalid_lines.join(', ')}`]
              : []),
          ]),
        );
        if (result.invalid_lines.length > 0) process.exitCode = 1;
      }),
    );
};
