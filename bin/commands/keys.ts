/** `branch-api keys create | list | revoke | roll | audit` (the key actions are in key-actions.ts). */
import { Option, type Command } from 'commander';
import { createKey, listKeys, revokeKey } from '../../lib/operator/operations';
import { auditKeys, DEFAULT_GRACE, rollKey } from '../../lib/operator/lifecycle';
import { formatTable } from '../../lib/operator/format';
import { lines, terminal, type TerminalText } from '../../lib/operator/terminal';
import type { ApiKeyRecord } from '../../shared/domain/key-record';
import { dash, defined, outputWidth, print, withContext, type JsonOption } from './kit';

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

interface CreateOptions extends JsonOption {
  branch: string;
  scopes: string;
  expires?: string;
  name?: string;
  allowIp?: string;
  rateLimit?: string;
}

const addCreate = (keys: Command): void => {
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
      withContext(async (ctx, options: CreateOptions) => {
        const { key, record } = await createKey(ctx, {
          branchId: options.branch,
          scopes: options.scopes,
          ...defined({
            expires: options.expires,
            name: options.name,
            allowIps: options.allowIp,
            rateLimit: options.rateLimit,
          }),
        });
        print({ key, ...record }, options, () =>
          newKeyText(key, record, terminal`Created key ${record.key_id} for branch ${record.branch_id}`),
        );
      }),
    );
};

const LIST_HEADER = [
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
];

/** Left out, in this order, when a terminal is too narrow for every column. */
const LIST_DROPPABLE = ['ROLLED', 'ALLOWED IPS', 'REVOKED', 'CREATED', 'START', 'RATE LIMIT', 'EXPIRES'];

const addList = (keys: Command): void => {
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
            ? terminal`No keys for branch ${options.branch}; create one with: branch-api keys create --branch ${options.branch} --scopes read`
            : formatTable(
                LIST_HEADER,
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
                outputWidth(),
                LIST_DROPPABLE,
              ),
        );
      }),
    );
};

const addRevokeAndRoll = (keys: Command): void => {
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
};

const addAudit = (keys: Command): void => {
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
};

/** The `keys` group with its create, list, revoke, roll and audit commands. */
export const addKeyCommands = (program: Command): Command => {
  const keys = program.command('keys').description('Create, list, edit, disable, roll, audit and revoke API keys');
  addCreate(keys);
  addList(keys);
  addRevokeAndRoll(keys);
  addAudit(keys);
  return keys;
};
