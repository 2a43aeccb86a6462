/** `branch-api seed <file>` and `branch-api tables create`: the data the API serves, and its tables. */
import type { Command } from 'commander';
import { lines, terminal } from '../../lib/operator/terminal';
import { withProgress } from '../../lib/operator/progress';
import { print, withContext, type JsonOption } from './kit';

export const addDataCommands = (program: Command): void => {
  program
    .command('seed')
    .description('Load branches, members and payment providers from a JSON file (see README)')
    .argument('<file>', 'seed file')
    .option('--json', 'JSON output')
    .action(
      withContext(async (ctx, file: string, options: JsonOption) => {
        const { seed } = await import('../../lib/operator/seed');
        const result = await withProgress('Seeding branches', (update) => seed(ctx, file, update));
        print(
          result,
          options,
          () =>
            terminal`Loaded ${result.branches} branch(es), ${result.members} member(s), ${result.payment_providers} payment provider(s)`,
        );
      }),
    );

  program
    .command('tables')
    .description('Table administration')
    .command('create')
    .description('Create the tables (where missing) on the target DynamoDB')
    .option('--json', 'JSON output')
    .action(
      withContext(async (ctx, options: JsonOption) => {
        const { ensureTables } = await import('../../lib/operator/tables');
        const created = await ensureTables(ctx.client, ctx.tables);
        const existing = Object.values(ctx.tables).filter((name) => !created.includes(name));
        print({ created, existing, tables: ctx.tables }, options, () =>
          lines([
            terminal`Created: ${created.length ? created.join(', ') : 'none'}`,
            ...(existing.length ? [terminal`Already there: ${existing.join(', ')}`] : []),
          ]),
        );
      }),
    );
};
