/**
 * `branch-api`: the operator CLI (keys, usage, seed, tables) and the local stack (`serve`).
 * Every command prints readable text by default and JSON with --json; bad input exits 1 with
 * one line on stderr (a JSON object with --json). Human output goes through
 * lib/operator/terminal.ts, so stored values cannot drive the terminal.
 */
import { readFileSync } from 'node:fs';
import { Command, CommanderError, Help, InvalidArgumentError, Option } from 'commander';
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
import { auditKeys, DEFAULT_GRACE, rollKey } from '../lib/operator/lifecycle';
import { DataStoreError, DataStoreUnavailableError } from '../shared/data/data-store-errors';
import { serve } from '../lib/local/serve';
import { formatTable } from '../lib/operator/format';
import { DEMO_SEED_FILE } from '../lib/local/environment';
import { escapeForTerminal, lines, terminal, terminalSafeJson, type TerminalText } from '../lib/operator/terminal';
import type { ApiKeyRecord } from '../shared/data/repositories/keys';
import { runConsoleCommand } from '../lib/console/command';
import { addUsageRollupCommands, formatSetAside } from './usage-rollup-commands';
import { setAsideReport } from '../lib/operator/usage-rollups';

interface JsonOption {
  json?: boolean;
}

const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

/** The one way a command writes its result: exact JSON with --json, escaped text otherwise. */
const print = (value: unknown, options: JsonOption, text: () => TerminalText): void => {
  process.stdout.write(`${options.json ? terminalSafeJson(value) : text().text}\n`);
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

/** A new key's settings and its value, shown this once. */
const newKeyText = (key: string, record: ApiKeyRecord, heading: TerminalText): TerminalText =>
  lines([
    heading,
    terminal`  name:    ${record.name}`,
    terminal`  scopes:  ${record.scopes.join(', ')}`,
    terminal`  expires: ${record.expires_at ?? 'never'}`,
    terminal`  from:    ${record.allowed_ips?.join(', ') ?? 'any IP address'}`,
    terminal`  rate limit: ${record.rate_limit ?? 'default'}`,
    terminal``,
    terminal`  ${key}`,
    terminal``,
    terminal`Store this key now: it is shown only once and cannot be recovered.`,
  ]);

/** `from key_a`, `to key_b`, both, or `-`. */
const rollLinks = ({ rolled_from, rolled_to }: { rolled_from?: string; rolled_to?: string }) =>
  [rolled_from && `from ${rolled_from}`, rolled_to && `to ${rolled_to}`].filter(Boolean).join(', ') || '-';

/** Help marks required options; commander shows defaults and environment variables itself. */
const helpConfiguration: Partial<Help> = {
  optionDescription(this: Help, option: Option): string {
    const description = Help.prototype.optionDescription.call(this, option);
    return option.mandatory ? `${description} (required)` : description;
  },
};

export const buildProgram = (jsonErrors = false): Command => {
  const program = new Command('branch-api')
    // Settings given before the commands are added are inherited by every subcommand.
    .configureHelp(helpConfiguration)
    .configureOutput(
      jsonErrors
        ? // The error is written once, as JSON, by the caller of parseAsync.
          { writeErr: () => undefined }
        : { outputError: (message, write) => write(message.split('\n').map(escapeForTerminal).join('\n')) },
    )
    .version(version, '-V, --version', 'print the version')
    .description('Branch API: run the local stack, manage API keys, read usage, load branch data.')
    .addHelpText(
      'after',
      `
Target: DYNAMODB_ENDPOINT (e.g. the one "npm start" prints) or, when unset, AWS with the default
credentials and AWS_REGION. Table names: KEYS_TABLE, USAGE_TABLE, BRANCH_DATA_TABLE, ROLLUPS_TABLE
(a deployed stack's outputs); by default the local stack's names.`,
    )
    .showHelpAfterError('(run with --help for usage)')
    // `usage --branch …` (the log) and `usage summary --branch …` both have a --branch.
    .enablePositionalOptions()
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
    .addOption(new Option('--seed <file>', 'seed file to load').default(DEMO_SEED_FILE, 'seed/demo.json'))
    .addOption(
      new Option('--console-port <port>', 'settings console port (on 127.0.0.1)')
        .env('CONSOLE_PORT')
        .default(3001)
        .argParser(port),
    )
    .action(serve);

  program
    .command('console')
    .description('Start the settings console: the "API keys" and "API usage" pages in a browser')
    .addOption(new Option('--port <port>', 'HTTP port').env('CONSOLE_PORT').default(3001).argParser(port))
    .addOption(
      new Option('--host <host>', 'address to listen on (anything but loopback is reachable from the network)').default(
        '127.0.0.1',
      ),
    )
    .option('--branch <id...>', 'branches to list on the home page')
    .action(runConsoleCommand);

  const keys = program.command('keys').description('Create, list and revoke API keys');
  keys
    .command('create')
    .description('Create a key; its value is printed once and never again')
    .requiredOption('--branch <id>', 'branch the key belongs to')
    .requiredOption('--scopes <list>', 'comma-separated: read, write, webhooks, team:read, billing:read')
    .option('--expires <iso8601>', 'expiry date or date-time (UTC unless an offset is given); unset: never expires')
    .addOption(new Option('--name <label>', 'a label to tell keys apart').default('API key'))
    .option('--allow-ip <cidr,...>', 'only these IPv4/IPv6 addresses or CIDR blocks may use the key')
    .option('--rate-limit <N/unit>', "calls allowed per s, min or h, e.g. 20/s (default: the deployment's)")
    .option('--json', 'JSON output')
    .action(
      withContext(
        async (
          ctx,
          options: {
            branch: string;
            scopes: string;
            expires?: string;
            name?: string;
            allowIp?: string;
            rateLimit?: string;
          } & JsonOption,
        ) => {
          const { key, record } = await createKey(ctx, {
            branchId: options.branch,
            scopes: options.scopes,
            ...(options.expires !== undefined ? { expires: options.expires } : {}),
            ...(options.name !== undefined ? { name: options.name } : {}),
            ...(options.allowIp !== undefined ? { allowIps: options.allowIp } : {}),
            ...(options.rateLimit !== undefined ? { rateLimit: options.rateLimit } : {}),
          });
          print({ key, ...record }, options, () =>
            newKeyText(key, record, terminal`Created key ${record.key_id} for branch ${record.branch_id}`),
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
            ? terminal`No keys for branch ${options.branch}`
            : formatTable(
                [
                  'ID',
                  'NAME',
                  'START',
                  'SCOPES',
                  'RATE LIMIT',
                  'STATUS',
                  'CREATED',
                  'EXPIRES',
                  'REVOKED',
                  'LAST USED',
                  'ALLOWED IPS',
                  'ROLLED',
                ],
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
                  dash(k.allowed_ips?.join(',')),
                  rollLinks(k),
                ]),
              ),
        );
      }),
    );

  keys
    .command('revoke')
    .description('Revoke a key: refused from the next request on. A revoked key stays revoked (exit 0).')
    .argument('<key_id>', 'the key id (key_...)')
    .requiredOption('--branch <id>', 'branch the key belongs to')
    .option('--json', 'JSON output (already_revoked: true when it was revoked before)')
    .action(
      withContext(async (ctx, keyId: string, options: { branch: string } & JsonOption) => {
        const record = await revokeKey(ctx, { branchId: options.branch, keyId });
        print(record, options, () =>
          record.already_revoked
            ? terminal`Key ${record.key_id} (branch ${record.branch_id}) was already revoked at ${record.revoked_at}; nothing changed`
            : terminal`Revoked key ${record.key_id} (branch ${record.branch_id}) at ${record.revoked_at}`,
        );
      }),
    );

  keys
    .command('roll')
    .description('Replace a key: a new key with the same settings; the old one works until the grace period ends')
    .argument('<key_id>', 'the key id (key_...)')
    .requiredOption('--branch <id>', 'branch the key belongs to')
    .option('--grace <duration>', 'how long the old key keeps working: 30s, 15m, 24h, 7d, or 0', DEFAULT_GRACE)
    .option('--json', 'JSON output')
    .action(
      withContext(async (ctx, keyId: string, options: { branch: string; grace: string } & JsonOption) => {
        const { key, record, previous } = await rollKey(ctx, { keyId, branchId: options.branch, grace: options.grace });
        print({ key, ...record, previous }, options, () =>
          newKeyText(
            key,
            record,
            lines([
              terminal`Rolled key ${previous.key_id} to ${record.key_id} for branch ${record.branch_id}`,
              terminal`  old key works until: ${previous.expires_at}`,
            ]),
          ),
        );
      }),
    );

  keys
    .command('audit')
    .description('Findings per active key of a branch: unused, unneeded scopes, no expiry, expiring, no IP allowlist')
    .requiredOption('--branch <id>', 'branch id')
    .option('--json', 'JSON output')
    .action(
      withContext(async (ctx, options: { branch: string } & JsonOption) => {
        const report = await auditKeys(ctx, { branchId: options.branch });
        print(report, options, () =>
          report.keys.length === 0
            ? terminal`No active keys for branch ${options.branch}`
            : lines(
                report.keys.flatMap((k, index) => [
                  ...(index > 0 ? [terminal``] : []),
                  terminal`${k.key_id} (${k.start}…) last used ${dash(k.last_used_at)}`,
                  ...(k.findings.length === 0
                    ? [terminal`  no findings`]
                    : k.findings.map((finding) => terminal`  ${finding.code.padEnd(16)} ${finding.message}`)),
                ]),
              ),
        );
      }),
    );

  const usage = program
    .command('usage')
    .description("Show a branch's API usage log, newest first, with a summary; or a subcommand")
    // Checked in the action: a required option here would be required by the subcommands too.
    .option('--branch <id>', 'branch id (required)')
    .option('--key <key_id>', 'only calls made with this key')
    .option('--since <iso8601>', 'only calls at or after this time')
    .option('--limit <n>', `how many records (1-${MAX_USAGE_LIMIT})`, positiveInt(MAX_USAGE_LIMIT), 50)
    .option('--json', 'JSON output')
    .action(
      withContext(
        async (ctx, options: { branch?: string; key?: string; since?: string; limit: number } & JsonOption) => {
          if (options.branch === undefined) throw new OperatorError("required option '--branch <id>' not specified");
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
            const head = lines([
              terminal`${summary.count} call(s)${statuses ? ` — ${statuses}` : ''}`,
              terminal`response time p50 ${summary.p50_ms ?? '-'} ms, p95 ${summary.p95_ms ?? '-'} ms`,
              ...(setAside ? [formatSetAside(setAside)] : []),
            ]);
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
            return terminal`${head}\n\n${table}`;
          });
        },
      ),
    );

  addUsageRollupCommands(usage, { withContext, print });

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

/** `--json` anywhere among the arguments (before a `--`) asks for JSON errors too. */
const args = process.argv.slice(2);
const jsonErrors = (args.includes('--') ? args.slice(0, args.indexOf('--')) : args).includes('--json');

const fail = (message: string, exitCode: number): void => {
  process.stderr.write(
    jsonErrors ? `${terminalSafeJson({ error: { message } }, 0)}\n` : `${terminal`error: ${message}`}\n`,
  );
  process.exitCode = exitCode;
};

try {
  await buildProgram(jsonErrors).parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    // Help and version exit 0. Otherwise commander has printed its message already, unless
    // JSON errors were asked for.
    process.exitCode = error.exitCode;
    if (jsonErrors && error.exitCode !== 0) {
      const message =
        error.code === 'commander.help' ? 'a command is missing (run with --help for usage)' : error.message;
      fail(message.replace(/^error: /, ''), error.exitCode);
    }
  } else {
    fail(describeFailure(error), 1);
  }
}
