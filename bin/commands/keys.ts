/** `branch-api keys …`: every key action (lib/operator/keys.ts), its options parsed here. */
import { Option, type Command } from 'commander';
import type { LastRefused } from '../../lib/operator/key-audit';
import type { KeyListing, KeySettings } from '../../lib/operator/keys';
import { DEFAULT_GRACE, MAX_ACTIVITY_LIMIT } from '../../lib/operator/limits';
import { OperatorError } from '../../lib/operator/errors';
import { formatTable, rollLinks } from '../../lib/operator/format';
import { lines, terminal, type TerminalText } from '../../lib/operator/terminal';
import type { ApiKeyRecord } from '../../shared/domain/key-record';
import { KEY_STATES, type KeyState } from '../../shared/domain/key-state';
import { branchCommand, outputWidth, positiveInt, print, withContext, withKeyAction, type JsonOption } from './kit';
import { activityTable } from './tables';

const SCOPES_HELP = 'comma-separated: read, write, webhooks, team:read, billing:read';
const ALLOW_IP_HELP = 'only these IPv4/IPv6 addresses or CIDR blocks may use the key';

/** The key actions, loaded when a command runs: `--help` needs none of them. */
const keyActions = () => import('../../lib/operator/keys');

/** A key's settings, one per line. */
const settingsText = (record: ApiKeyRecord): TerminalText[] => [
  terminal`  name:    ${record.name}`,
  terminal`  scopes:  ${record.scopes.join(', ')}`,
  terminal`  expires: ${record.expires_at ?? 'never'}`,
  terminal`  from:    ${record.allowed_ips?.join(', ') ?? 'any IP address'}`,
  terminal`  rate limit: ${record.rate_limit ?? 'default'}`,
];

/** A new key's settings and its value, shown this once. */
const newKeyText = (key: string, record: ApiKeyRecord, heading: TerminalText): TerminalText =>
  lines([
    heading,
    ...settingsText(record),
    terminal``,
    terminal`  ${key}`,
    terminal``,
    terminal`Store this key now: it is shown only once and cannot be recovered.`,
  ]);

interface SettingsOptions {
  name?: string;
  scopes?: string;
  /** false: `--no-…` (unset it). */
  expires?: string | false;
  allowIp?: string | false;
  rateLimit?: string | false;
}

/** A `--x <value>` / `--no-x` pair: the parsed value, null to unset, or nothing when neither was given. */
const setOrUnset = <K extends keyof KeySettings, T>(
  name: K,
  value: string | false | undefined,
  parse: (v: string) => T,
) => (value === undefined ? {} : { [name]: value === false ? null : parse(value) }) as Partial<Record<K, T | null>>;

/** The options as typed settings (lib/operator/input.ts reads the text). */
const settingsOf = async (options: SettingsOptions): Promise<KeySettings> => {
  const { parseAllowedIps, parseIsoDate, parseRateLimitText, parseScopes } = await import('../../lib/operator/input');
  return {
    ...(options.name !== undefined ? { name: options.name } : {}),
    ...(options.scopes !== undefined ? { scopes: parseScopes(options.scopes) } : {}),
    ...setOrUnset('expiresAt', options.expires, (v) => parseIsoDate(v, 'expires_at')),
    ...setOrUnset('allowedIps', options.allowIp, parseAllowedIps),
    ...setOrUnset('rateLimit', options.rateLimit, parseRateLimitText),
  };
};

const dash = (value: string | null | undefined) => value ?? '-';

/** A key's last refused call and why (`2027-01-01T02:43:49.000Z as revoked`), or `-`. */
const refusedText = (refused: LastRefused | null): string => (refused ? `${refused.at} as ${refused.as}` : '-');

/** The columns of `keys list`: each header with its cell. */
const LIST_COLUMNS: readonly (readonly [string, (key: KeyListing) => string])[] = [
  ['ID', (k) => k.key_id],
  ['NAME', (k) => k.name],
  ['START', (k) => `${k.start}…`],
  ['SCOPES', (k) => k.scopes.join(',')],
  ['RATE LIMIT', (k) => k.rate_limit ?? 'default'],
  ['STATUS', (k) => k.status],
  ['CREATED', (k) => k.created_at],
  ['EXPIRES', (k) => dash(k.expires_at)],
  ['REVOKED', (k) => dash(k.revoked_at)],
  ['LAST USED', (k) => dash(k.last_used_at)],
  ['LAST REFUSED', (k) => refusedText(k.last_refused)],
  ['ALLOWED IPS', (k) => dash(k.allowed_ips?.join(','))],
  [
    'ROLLED',
    (k) =>
      rollLinks(k)
        .map(([direction, keyId]) => `${direction} ${keyId}`)
        .join(', ') || '-',
  ],
];

/** Left out, in this order, when a terminal is too narrow for every column. */
const LIST_DROPPABLE = ['ROLLED', 'ALLOWED IPS', 'REVOKED', 'CREATED', 'RATE LIMIT', 'EXPIRES'];

/** Disable and enable: one call each, reported alike. */
const STATE_ACTIONS = [
  {
    name: 'disable',
    description: 'Disable a key: its calls get 401 disabled_api_key until it is enabled',
    action: 'disableKey',
    done: 'Disabled',
    unchanged: 'is already disabled',
  },
  {
    name: 'enable',
    description: 'Enable a disabled key again',
    action: 'enableKey',
    done: 'Enabled',
    unchanged: 'is not disabled',
  },
] as const;

type KeyOptions = { branch: string } & JsonOption;

const OF_KEY = 'branch the key belongs to';

/** `keys <name> <key_id> --branch <id>`: a command that acts on one key. */
const keyCommand = (keys: Command, name: string, description: string, json?: string): Command =>
  branchCommand(keys, name, description, OF_KEY, json).argument('<key_id>', 'the key id (key_...)');

/** `keys create` and `keys list`. */
const addCreateAndList = (keys: Command): void => {
  branchCommand(keys, 'create', 'Create a key; its value is printed once and never again', OF_KEY)
    .requiredOption('--scopes <list>', SCOPES_HELP)
    .option('--expires <iso8601>', 'expiry (UTC unless an offset is given); unset: never expires')
    .option('--name <label>', 'a label to tell keys apart (default: API key N)')
    .option('--allow-ip <cidr,...>', ALLOW_IP_HELP)
    .option('--rate-limit <N/unit>', "calls per s, min or h, e.g. 20/s (default: the deployment's)")
    .action(
      withKeyAction(async (ctx, options: KeyOptions & SettingsOptions) => {
        const { scopes = [], ...settings } = await settingsOf(options);
        const { createKey } = await keyActions();
        const { key, record, pending } = await createKey(ctx, { branchId: options.branch, scopes, ...settings });
        print({ key, ...record, ...(pending ? { pending } : {}) }, options, () =>
          newKeyText(key, record, terminal`Created key ${record.key_id} for branch ${record.branch_id}`),
        );
        return pending;
      }),
    );

  branchCommand(keys, 'list', "List a branch's keys, newest first")
    .addOption(new Option('--status <state>', 'only keys in this state').choices(KEY_STATES))
    .option('--name <text>', 'only keys whose name contains this text (any case)')
    .option('--value-prefix <prefix>', 'only keys whose value starts so (a whole value is hashed, never kept)')
    .action(
      withContext(async (ctx, options: KeyOptions & { status?: KeyState; name?: string; valuePrefix?: string }) => {
        const filter = {
          ...(options.status ? { status: options.status } : {}),
          ...(options.name ? { name: options.name } : {}),
          ...(options.valuePrefix ? { valuePrefix: options.valuePrefix } : {}),
        };
        const { listKeys } = await keyActions();
        const listing = await listKeys(ctx, options.branch, new Date(), filter);
        print(listing, options, () =>
          listing.length > 0
            ? formatTable(
                LIST_COLUMNS.map(([header]) => header),
                listing.map((key) => LIST_COLUMNS.map(([, cell]) => cell(key))),
                outputWidth(),
                LIST_DROPPABLE,
              )
            : Object.keys(filter).length > 0
              ? terminal`No keys of branch ${options.branch} match`
              : terminal`No keys for branch ${options.branch}; create one with: branch-api keys create --branch ${options.branch} --scopes read`,
        );
      }),
    );
};

/** The changes of one key: update, disable, enable, revoke. */
const addKeyActions = (keys: Command): void => {
  keyCommand(keys, 'update', "Change a live key's settings (from its next call)")
    .option('--name <label>', 'new label')
    .option('--scopes <list>', SCOPES_HELP)
    .option('--rate-limit <N/unit>', 'calls allowed per s, min or h, e.g. 20/s')
    .option('--no-rate-limit', "back to the deployment's default rate limit")
    .option('--allow-ip <cidr,...>', ALLOW_IP_HELP)
    .option('--no-allow-ip', 'usable from any address')
    .option('--expires <iso8601>', 'new expiry, in the future')
    .option('--no-expires', 'never expires')
    .action(
      withKeyAction(async (ctx, keyId: string, options: KeyOptions & SettingsOptions) => {
        const settings = await settingsOf(options);
        if (Object.keys(settings).length === 0) {
          throw new OperatorError(
            'Nothing to change: give --name, --scopes, --rate-limit, --allow-ip or --expires',
            'invalid_input',
            'key',
          );
        }
        const { updateKey } = await keyActions();
        const outcome = await updateKey(ctx, { branchId: options.branch, keyId, ...settings });
        print(outcome, options, () =>
          lines([
            outcome.changed
              ? terminal`Updated key ${keyId} (branch ${outcome.key.branch_id}); it is now:`
              : terminal`Key ${keyId} (branch ${outcome.key.branch_id}) already has these settings; nothing changed:`,
            ...settingsText(outcome.key),
          ]),
        );
        return outcome.pending;
      }),
    );

  for (const { name, description, action, done, unchanged } of STATE_ACTIONS) {
    keyCommand(keys, name, description, `JSON output (changed: false when it was ${name}d already)`).action(
      withKeyAction(async (ctx, keyId: string, options: KeyOptions) => {
        const outcome = await (await keyActions())[action](ctx, { branchId: options.branch, keyId });
        print(outcome, options, () =>
          outcome.changed
            ? terminal`${done} key ${outcome.key.key_id} (branch ${outcome.key.branch_id})`
            : terminal`Key ${outcome.key.key_id} (branch ${outcome.key.branch_id}) ${unchanged}; nothing changed`,
        );
        return outcome.pending;
      }),
    );
  }

  const revoke = 'Revoke a key: refused from the next request on (again: exit 0)';
  keyCommand(keys, 'revoke', revoke, 'JSON output (already_revoked: true when it was revoked before)').action(
    withKeyAction(async (ctx, keyId: string, options: KeyOptions) => {
      const { revokeKey } = await keyActions();
      const record = await revokeKey(ctx, { branchId: options.branch, keyId });
      print(record, options, () =>
        record.already_revoked
          ? terminal`Key ${record.key_id} (branch ${record.branch_id}) was already revoked at ${record.revoked_at}; nothing changed`
          : terminal`Revoked key ${record.key_id} (branch ${record.branch_id}) at ${record.revoked_at}`,
      );
      return record.pending;
    }),
  );
};

/** `keys roll`, `keys audit` and `keys activity`. */
const addRollAndReports = (keys: Command): void => {
  keyCommand(keys, 'roll', 'Replace a key: a new key with its settings; the old one works for a grace period')
    .option('--grace <duration>', 'how long the old key keeps working: 30s, 15m, 24h, 7d, 0', DEFAULT_GRACE)
    .action(
      withKeyAction(async (ctx, keyId: string, options: KeyOptions & { grace: string }) => {
        const { parseGrace } = await import('../../lib/operator/input');
        const { rollKey } = await keyActions();
        const graceMs = parseGrace(options.grace);
        const { key, record, previous, pending } = await rollKey(ctx, { keyId, branchId: options.branch, graceMs });
        print({ key, ...record, previous, ...(pending ? { pending } : {}) }, options, () =>
          newKeyText(
            key,
            record,
            lines([
              terminal`Rolled key ${previous.key_id} to ${record.key_id} for branch ${record.branch_id}`,
              terminal`  old key works until: ${previous.expires_at}`,
            ]),
          ),
        );
        return pending;
      }),
    );

  branchCommand(keys, 'audit', 'Findings per active key: unused, unneeded scopes, expiry, no IP allowlist').action(
    withContext(async (ctx, options: KeyOptions) => {
      const { auditKeys } = await keyActions();
      const report = await auditKeys(ctx, { branchId: options.branch });
      print(report, options, () =>
        report.keys.length === 0
          ? terminal`No active keys for branch ${options.branch}`
          : lines(
              report.keys.flatMap((k, index) => [
                ...(index > 0 ? [terminal``] : []),
                terminal`${k.name} (${k.key_id}, ${k.start}…) last used ${dash(k.last_used_at)}, last refused ${refusedText(k.last_refused)}`,
                ...(k.findings.length === 0
                  ? [terminal`  no findings`]
                  : k.findings.map((finding) => terminal`  ${finding.code.padEnd(16)} ${finding.message}`)),
              ]),
            ),
      );
    }),
  );

  branchCommand(keys, 'activity', 'Who did what to which key, and when')
    .option('--key <key_id>', "only this key's actions")
    .option('--limit <n>', `how many, newest first (1-${MAX_ACTIVITY_LIMIT})`, positiveInt(MAX_ACTIVITY_LIMIT), 50)
    .action(
      withContext(async (ctx, options: KeyOptions & { key?: string; limit: number }) => {
        const { listActivity } = await keyActions();
        const entries = await listActivity(ctx, { branchId: options.branch, keyId: options.key, limit: options.limit });
        print(entries, options, () =>
          entries.length === 0
            ? terminal`No key activity for branch ${options.branch} yet; it starts with the next key action`
            : activityTable(entries, { oneKey: options.key !== undefined, width: outputWidth() }),
        );
      }),
    );
};

/** The `keys` group: create, list, update, disable, enable, revoke, roll, audit, activity. */
export const addKeyCommands = (program: Command): void => {
  const keys = program.command('keys').description('Create, list, edit, disable, roll, audit and revoke API keys');
  addCreateAndList(keys);
  addKeyActions(keys);
  addRollAndReports(keys);
};
