/**
 * `branch-api`: the operator CLI (keys, usage, seed, tables) and the local stack (`serve`).
 * Every command prints readable text by default and JSON with --json; bad input exits 1 with
 * one line on stderr.
 */
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { createOperatorContext, type OperatorContext } from '../lib/operator/context';
import {
  createKey,
  listKeys,
  MAX_USAGE_LIMIT,
  OperatorError,
  readUsage,
  revokeKey,
  seed,
} from '../lib/operator/operations';
import { ensureTables } from '../lib/operator/tables';
import { DataStoreError, DataStoreUnavailableError } from '../shared/data-store-errors';
import { serve } from '../lib/local/serve';
import { formatTable } from '../lib/operator/format';

interface JsonOption {
  json?: boolean;
}

const print = (value: unknown, options: JsonOption, text: () => string): void => {
  process.stdout.write(`${options.json ? JSON.stringify(value, null, 2) : text()}\n`);
};

const positiveInt = (max: number) => (value: string) => {
  if (!/^[1-9][0-9]*$/.test(value) || Number(value) > max) {
    throw new InvalidArgumentError(`must be a whole number from 1 to ${max}`);
  }
  return Number(value);
};

const port = (value: string) => {
  if (!/^[0-9]+$/.test(value) || Number(value) > 65535) throw new InvalidArgumentError('must be a port number');
  return Number(value);
};

/** Runs an operator command with a context that is always closed. */
const withContext =
  <Args extends unknown[]>(action: (ctx: OperatorContext, ...args: Args) => Promise<void>) =>
  async (...args: Args): Promise<void> => {
    const ctx = createOperatorContext(process.env);
    try {
      await action(ctx, ...args);
    } finally {
      ctx.close();
    }
  };

const dash = (value: string | null | undefined) => value ?? '-';

export const buildProgram = (): Command => {
  const program = new Command('branch-api')
    .description('Branch API: run the local stack, manage API keys, read usage, load branch data.')
    .addHelpText(
      'after',
      `
Target: DYNAMODB_ENDPOINT (e.g. the one "npm start" prints) or, when unset, AWS with the default
credentials and AWS_REGION. Table names: KEYS_TABLE, USAGE_TABLE, BRANCH_DATA_TABLE (a deployed
stack's outputs); by default the local stack's names.`,
    )
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();

  program
    .command('serve')
    .description('Start the local stack: embedded DynamoDB, demo data, a demo key, the API on http://HOST:PORT/api')
    .addOption(new Option('--port <port>', 'HTTP port').env('PORT').default(3000).argParser(port))
    .addOption(new Option('--host <host>', 'HTTP host').env('HOST').default('127.0.0.1'))
    .addOption(
      new Option('--dynamodb-port <port>', 'embedded DynamoDB port').env('DYNAMODB_PORT').default(8000).argParser(port),
    )
    .addOption(new Option('--dynamodb-endpoint <url>', 'use this DynamoDB instead').env('DYNAMODB_ENDPOINT'))
    .option('--data-dir <dir>', 'keep the embedded DynamoDB data in this directory across restarts')
    .option('--seed <file>', 'seed file to load', undefined)
    .action(serve);

  const keys = program.command('keys').description('Create, list and revoke API keys');
  keys
    .command('create')
    .description('Create a key; its value is printed once and never again')
    .requiredOption('--branch <id>', 'branch the key belongs to')
    .requiredOption('--scopes <list>', 'comma-separated: read, write, webhooks, team:read, billing:read')
    .option('--expires <iso8601>', 'expiry date-time (UTC unless an offset is given)')
    .option('--name <label>', 'a label to tell keys apart')
    .option('--rate-limit <N/unit>', "calls allowed per s, min or h, e.g. 20/s (default: the deployment's)")
    .option('--json', 'JSON output')
    .action(
      withContext(
        async (
          ctx,
          options: { branch: string; scopes: string; expires?: string; name?: string; rateLimit?: string } & JsonOption,
        ) => {
          const { key, record } = await createKey(ctx, {
            branchId: options.branch,
            scopes: options.scopes,
            ...(options.expires !== undefined ? { expires: options.expires } : {}),
            ...(options.name !== undefined ? { name: options.name } : {}),
            ...(options.rateLimit !== undefined ? { rateLimit: options.rateLimit } : {}),
          });
          print({ key, ...record }, options, () =>
            [
              `Created key ${record.key_id} for branch ${record.branch_id}`,
              `  name:    ${record.name}`,
              `  scopes:  ${record.scopes.join(', ')}`,
              `  expires: ${record.expires_at ?? 'never'}`,
              `  rate limit: ${record.rate_limit ?? 'default'}`,
              '',
              `  ${key}`,
              '',
              'Store this key now: it is shown only once and cannot be recovered.',
            ].join('\n'),
          );
        },
      ),
    );

  keys
    .command('list')
    .description("List a branch's keys, newest first")
    .requiredOption('--branch <id>', 'branch id')
    .option('--json', 'JSON output')
    .action(
      withContext(async (ctx, options: { branch: string } & JsonOption) => {
        const listing = await listKeys(ctx, options.branch);
        print(listing, options, () =>
          listing.length === 0
            ? `No keys for branch ${options.branch}`
            : formatTable(
                ['ID', 'NAME', 'START', 'SCOPES', 'RATE LIMIT', 'STATUS', 'CREATED', 'EXPIRES', 'REVOKED', 'LAST USED'],
                listing.map((k) => [
                  k.key_id,
                  k.name,
                  `${k.start}…`,
                  k.scopes.join(','),
                  k.rate_limit ?? 'default',
                  k.status,
                  k.created_at,
                  dash(k.expires_at),
                  dash(k.revoked_at),
                  dash(k.last_used_at),
                ]),
              ),
        );
      }),
    );

  keys
    .command('revoke')
    .description('Revoke a key: refused from the next request on')
    .argument('<key_id>', 'the key id (key_...)')
    .option('--json', 'JSON output')
    .action(
      withContext(async (ctx, keyId: string, options: JsonOption) => {
        const record = await revokeKey(ctx, keyId);
        print(
          record,
          options,
          () => `Revoked key ${record.key_id} (branch ${record.branch_id}) at ${record.revoked_at}`,
        );
      }),
    );

  program
    .command('usage')
    .description("Show a branch's API usage log, newest first, with a summary")
    .requiredOption('--branch <id>', 'branch id')
    .option('--key <key_id>', 'only calls made with this key')
    .option('--since <iso8601>', 'only calls at or after this time')
    .option('--limit <n>', `how many records (1-${MAX_USAGE_LIMIT})`, positiveInt(MAX_USAGE_LIMIT), 50)
    .option('--json', 'JSON output')
    .action(
      withContext(
        async (ctx, options: { branch: string; key?: string; since?: string; limit: number } & JsonOption) => {
          const { records, summary } = await readUsage(ctx, {
            branchId: options.branch,
            limit: options.limit,
            ...(options.key !== undefined ? { keyId: options.key } : {}),
            ...(options.since !== undefined ? { since: options.since } : {}),
          });
          print({ summary, records }, options, () => {
            const statuses = Object.entries(summary.by_status)
              .map(([status, count]) => `${status}: ${count}`)
              .join(', ');
            const head = [
              `${summary.count} call(s)${statuses ? ` — ${statuses}` : ''}`,
              `response time p50 ${summary.p50_ms ?? '-'} ms, p95 ${summary.p95_ms ?? '-'} ms`,
            ].join('\n');
            if (records.length === 0) return head;
            const table = formatTable(
              ['TIME', 'KEY', 'METHOD', 'PATH', 'STATUS', 'MS', 'REQUEST ID'],
              records.map((r) => [
                r.timestamp,
                r.key_id,
                r.method,
                r.path,
                String(r.status),
                String(r.response_time_ms),
                r.request_id,
              ]),
            );
            return `${head}\n\n${table}`;
          });
        },
      ),
    );

  program
    .command('seed')
    .description('Load branches, members and payment providers from a JSON file (see README)')
    .argument('<file>', 'seed file')
    .option('--json', 'JSON output')
    .action(
      withContext(async (ctx, file: string, options: JsonOption) => {
        const result = await seed(ctx, file);
        print(
          result,
          options,
          () =>
            `Loaded ${result.branches} branch(es), ${result.members} member(s), ${result.payment_providers} payment provider(s)`,
        );
      }),
    );

  program
    .command('tables')
    .description('Table administration')
    .command('create')
    .description('Create the three tables (where missing) on the target DynamoDB')
    .option('--json', 'JSON output')
    .action(
      withContext(async (ctx, options: JsonOption) => {
        const created = await ensureTables(ctx.client, ctx.tables);
        const existing = Object.values(ctx.tables).filter((name) => !created.includes(name));
        print({ created, existing, tables: ctx.tables }, options, () =>
          [
            created.length ? `Created: ${created.join(', ')}` : 'Created: none',
            existing.length ? `Already there: ${existing.join(', ')}` : '',
          ]
            .filter(Boolean)
            .join('\n'),
        );
      }),
    );

  return program;
};

const describeFailure = (error: unknown): string => {
  if (error instanceof OperatorError) return error.message;
  if (error instanceof DataStoreUnavailableError) {
    return 'DynamoDB is not reachable (is DYNAMODB_ENDPOINT right, is the local stack running?)';
  }
  if (error instanceof DataStoreError) return `DynamoDB refused the request: ${error.message} (do the tables exist?)`;
  return error instanceof Error ? error.message : String(error);
};

try {
  await buildProgram().parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    // Help and version exit 0; commander has already printed its own message for usage errors.
    process.exitCode = error.exitCode;
  } else {
    process.stderr.write(`error: ${describeFailure(error)}\n`);
    process.exitCode = 1;
  }
}
