/** `branch-api keys update | disable | enable | activity` (lib/operator/key-actions.ts). */
import type { Command } from 'commander';
import { disableKey, enableKey, listActivity, MAX_ACTIVITY_LIMIT, updateKey } from '../../lib/operator/key-actions';
import type { KeyActionOutcome } from '../../lib/operator/key-actions';
import { formatTable } from '../../lib/operator/format';
import { terminal } from '../../lib/operator/terminal';
import type { ActivityEntry } from '../../shared/data/repositories/activity';
import { outputWidth, positiveInt, print, withContext, type JsonOption } from './kit';

interface UpdateOptions extends JsonOption {
  branch: string;
  name?: string;
  scopes?: string;
  /** false: `--no-…` (unset it). */
  rateLimit?: string | false;
  allowIp?: string | false;
  expires?: string | false;
}

/** A `--x <value>` / `--no-x` pair: `{ [name]: value }`, `{ [name]: null }` to unset, `{}` when neither was given. */
const setOrUnset = <K extends string>(name: K, value: string | false | undefined) =>
  (value === undefined ? {} : { [name]: value === false ? null : value }) as Partial<Record<K, string | null>>;

const shown = (value: unknown): string =>
  value === null || value === undefined ? '-' : Array.isArray(value) ? value.join(',') : String(value);

/** `name: sync → billing; rate_limit: - → 5/s` */
export const describeChanges = (entry: ActivityEntry): string =>
  Object.entries(entry.changes)
    .map(([field, { before, after }]) => `${field}: ${shown(before)} → ${shown(after)}`)
    .join('; ') || '-';

const reportAction = (outcome: KeyActionOutcome, options: JsonOption, done: string, unchanged: string): void =>
  print(outcome, options, () =>
    outcome.changed
      ? terminal`${done} key ${outcome.key.key_id} (branch ${outcome.key.branch_id})`
      : terminal`Key ${outcome.key.key_id} (branch ${outcome.key.branch_id}) ${unchanged}; nothing changed`,
  );

const addUpdate = (keys: Command): void => {
  keys
    .command('update')
    .description("Change a live key's name, scopes, rate limit, IP allowlist or expiry (from its next call)")
    .argument('<key_id>', 'the key id (key_...)')
    .requiredOption('--branch <id>', 'branch the key belongs to')
    .option('--name <label>', 'new label')
    .option('--scopes <list>', 'comma-separated: read, write, webhooks, team:read, billing:read')
    .option('--rate-limit <N/unit>', 'calls allowed per s, min or h, e.g. 20/s')
    .option('--no-rate-limit', "back to the deployment's default rate limit")
    .option('--allow-ip <cidr,...>', 'only these IPv4/IPv6 addresses or CIDR blocks may use the key')
    .option('--no-allow-ip', 'usable from any address')
    .option('--expires <iso8601>', 'new expiry, in the future')
    .option('--no-expires', 'never expires')
    .option('--json', 'JSON output')
    .action(
      withContext(async (ctx, keyId: string, options: UpdateOptions) => {
        const outcome = await updateKey(ctx, {
          branchId: options.branch,
          keyId,
          ...(options.name !== undefined ? { name: options.name } : {}),
          ...(options.scopes !== undefined ? { scopes: options.scopes } : {}),
          ...setOrUnset('rateLimit', options.rateLimit),
          ...setOrUnset('allowIps', options.allowIp),
          ...setOrUnset('expires', options.expires),
        });
        reportAction(outcome, options, 'Updated', 'already has these settings');
      }),
    );
};

const addDisableEnable = (keys: Command): void => {
  keys
    .command('disable')
    .description('Disable a key: its calls get 401 disabled_api_key until it is enabled; nothing else changes')
    .argument('<key_id>', 'the key id (key_...)')
    .requiredOption('--branch <id>', 'branch the key belongs to')
    .option('--json', 'JSON output (changed: false when it was disabled already)')
    .action(
      withContext(async (ctx, keyId: string, options: { branch: string } & JsonOption) => {
        reportAction(
          await disableKey(ctx, { branchId: options.branch, keyId }),
          options,
          'Disabled',
          'is already disabled',
        );
      }),
    );

  keys
    .command('enable')
    .description('Enable a disabled key again')
    .argument('<key_id>', 'the key id (key_...)')
    .requiredOption('--branch <id>', 'branch the key belongs to')
    .option('--json', 'JSON output (changed: false when it was enabled already)')
    .action(
      withContext(async (ctx, keyId: string, options: { branch: string } & JsonOption) => {
        reportAction(await enableKey(ctx, { branchId: options.branch, keyId }), options, 'Enabled', 'is not disabled');
      }),
    );
};

const addActivity = (keys: Command): void => {
  keys
    .command('activity')
    .description('Who did what to which key, and when: created, updated, disabled, enabled, rolled, revoked')
    .requiredOption('--branch <id>', 'branch id')
    .option('--key <key_id>', "only this key's actions")
    .option(
      '--limit <n>',
      `how many entries, newest first (1-${MAX_ACTIVITY_LIMIT})`,
      positiveInt(MAX_ACTIVITY_LIMIT),
      50,
    )
    .option('--json', 'JSON output')
    .action(
      withContext(async (ctx, options: { branch: string; key?: string; limit: number } & JsonOption) => {
        const entries = await listActivity(ctx, {
          branchId: options.branch,
          limit: options.limit,
          ...(options.key !== undefined ? { keyId: options.key } : {}),
        });
        print(entries, options, () =>
          entries.length === 0
            ? terminal`No key activity for branch ${options.branch} yet; it starts with the next key created, edited, disabled, rolled or revoked`
            : formatTable(
                ['TIME', 'ACTION', 'KEY', 'NAME', 'ACTOR', 'CHANGES'],
                entries.map((e) => [e.at, e.action, e.key_id, e.key_name, e.actor, describeChanges(e)]),
                outputWidth(),
              ),
        );
      }),
    );
};

/** Adds update, disable, enable and activity to the `keys` group. */
export const addKeyActionCommands = (keys: Command): void => {
  addUpdate(keys);
  addDisableEnable(keys);
  addActivity(keys);
};
