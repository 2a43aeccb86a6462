/**
 * A key action whose activity entry can't be written at once: the CLI does the action (exit 0),
 * warns on stderr that the entry is still pending and why, and the key actions finisher writes it
 * afterwards. The fault is IAM's answer: the verifier's policy proxy (lib/verify/recording-proxy.ts)
 * denies dynamodb:PutItem on the activity table, as an operator policy without that grant would.
 */
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { handler as getBranch } from '../../functions/get-branch';
import { createOperatorContext } from '../../lib/operator/context';
import type { RecordingProxy } from '../../lib/verify/recording-proxy';
import { runCli } from '../support/cli';
import { mainBranch } from '../support/fixtures';
import { createKey, expectError, invoke, setUpBranches } from '../support/harness';
import { DENIED, denyActivityCopy, STAYS } from './denied-activity';

const BRANCH = mainBranch.id;
const ACTIVITY_TABLE = process.env.ACTIVITY_TABLE!;
let proxy: RecordingProxy;
let eventsFile: string;
const ctx = createOperatorContext(process.env);

beforeAll(async () => {
  await setUpBranches();
  eventsFile = join(await mkdtemp(join(tmpdir(), 'pending-activity-')), 'key-events.jsonl');
  proxy = await denyActivityCopy();
});

afterAll(async () => {
  await proxy.close();
  ctx.close();
});

/** The CLI against the proxy: every call allowed but the activity table's PutItem. */
const runDenied = (args: string[]) => runCli(args, { DYNAMODB_ENDPOINT: proxy.endpoint, KEY_EVENTS_FILE: eventsFile });

/** The branch's activity log as stored, without finishing what is pending first (as `keys activity` would). */
const loggedActions = async (keyId: string) =>
  (await ctx.activity.page({ branchId: BRANCH, keyId, limit: 50 })).entries.map((entry) => entry.action);

/** Control and bidi characters written as they are: none may reach the terminal. */
const rawControls = (text: string) =>
  [...text].filter((char) => {
    const code = char.codePointAt(0)!;
    return code < 0x20 || (code >= 0x7f && code <= 0x9f) || (code >= 0x202a && code <= 0x202e);
  });

const sentEventIds = async () =>
  (await readFile(eventsFile, 'utf8'))
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line).detail.event_id as string);

it('disables the key, warns that its entry is pending and why, exits 0; the finisher writes it later', async () => {
  const { key, record } = await createKey({ name: 'sync' });
  const keyId = record.key_id;

  const result = await runDenied(['keys', 'disable', keyId, '--branch', BRANCH]);

  expect(result).toMatchObject({ code: 0, stdout: `Disabled key ${keyId} (branch ${BRANCH})\n` });
  expect(result.stderr).toBe(
    `warning: key ${keyId} disabled, but its activity entry is not written yet (${DENIED}): ${STAYS}\n`,
  );
  expect(proxy.denied).toContainEqual({ action: 'dynamodb:PutItem', table: ACTIVITY_TABLE });
  expectError(await invoke(getBranch, { path: '/v1/branch', key }), 401, 'disabled_api_key');
  // The event went out; only the copy to the log waits.
  expect(await sentEventIds()).toContain(`${keyId}#2`);
  expect(await loggedActions(keyId)).toEqual(['created']);

  expect(await ctx.keys.outbox.finishAll()).toEqual({ pending: 1, unsent: 0, uncopied: 0 });
  expect(await loggedActions(keyId)).toEqual(['disabled', 'created']);
  expect(await ctx.keys.outbox.finishAll()).toEqual({ pending: 0, unsent: 0, uncopied: 0 });
});

it('gives the pending entries in --json, and one warning per entry of a roll', async () => {
  const created = await runDenied(['keys', 'create', '--branch', BRANCH, '--scopes', 'read', '--json']);
  expect(created.code).toBe(0);
  const keyId = created.json.key_id as string;
  expect(created.json.pending).toEqual([
    {
      key_id: keyId,
      action: 'created',
      activity_id: `${keyId}#1`,
      copied: false,
      sent: true,
      reason: DENIED,
    },
  ]);
  expect(created.stderr).toBe(
    `warning: key ${keyId} created, but its activity entry is not written yet (${DENIED}): ${STAYS}\n`,
  );
  // The key's next action is not held up by the entry still waiting: it takes effect, and both wait in order.
  const rolled = await runDenied(['keys', 'roll', keyId, '--branch', BRANCH, '--grace', '0']);
  expect(rolled.code).toBe(0);
  const newId = (await ctx.keys.getById(keyId))!.rolled_to!;
  expect(rolled.stdout).toContain(`Rolled key ${keyId} to ${newId}`);
  expect(rolled.stderr.split('\n').filter(Boolean)).toEqual([
    'warning: 1 activity entry could not be written yet; the next command or start finishes them, in order',
    `warning: key ${keyId} created, but its activity entry is not written yet (${DENIED}): ${STAYS}`,
    `warning: key ${keyId} rolled, but its activity entry is not written yet (${DENIED}): ${STAYS}`,
    `warning: key ${newId} created, but its activity entry is not written yet (${DENIED}): ${STAYS}`,
  ]);

  expect(await ctx.keys.outbox.finishAll()).toEqual({ pending: 3, unsent: 0, uncopied: 0 });
  expect(await loggedActions(keyId)).toEqual(['rolled', 'created']);
  expect(await loggedActions(newId)).toEqual(['created']);
});

it('names the activity table DynamoDB refused, escaped for the terminal', async () => {
  const { record } = await createKey({ name: 'plain' });
  const result = await runCli(['keys', 'disable', record.key_id, '--branch', BRANCH], {
    ACTIVITY_TABLE: 'no-such-activity\u001b[2J\u202e',
    KEY_EVENTS_FILE: eventsFile,
  });
  expect(result.code).toBe(0);
  expect(result.stderr).toMatch(/^warning: key key_\S+ disabled, but its activity entry is not written yet \(/);
  expect(result.stderr).toContain(
    'DynamoDB refused the request on table no-such-activity\\x1b[2J\\u{202e} (ACTIVITY_TABLE, stack output ActivityTableName)',
  );
  expect(rawControls(result.stderr.slice(0, -1))).toEqual([]);
  expect(await ctx.keys.outbox.finishAll()).toEqual({ pending: 1, unsent: 0, uncopied: 0 });
  expect(await loggedActions(record.key_id)).toEqual(['disabled', 'created']);
});

it('says when the key event is not sent, and the finisher sends it later', async () => {
  const { record } = await createKey({ name: 'events' });
  // A directory where the events file should be: every append fails.
  const result = await runCli(['keys', 'disable', record.key_id, '--branch', BRANCH], { KEY_EVENTS_FILE: tmpdir() });
  expect(result.code).toBe(0);
  const lines = result.stderr.split('\n').filter(Boolean);
  expect(JSON.parse(lines[0]!)).toMatchObject({ level: 'ERROR', message: 'Key event not sent' });
  expect(lines.slice(1)).toEqual([
    `warning: key ${record.key_id} disabled, but its key event is not sent yet ` +
      `(its destination did not take it: see "Key event not sent" in the log): ${STAYS}`,
  ]);
  const finisher = createOperatorContext({ ...process.env, KEY_EVENTS_FILE: eventsFile });
  try {
    expect(await finisher.keys.outbox.finishAll()).toEqual({ pending: 1, unsent: 0, uncopied: 0 });
  } finally {
    finisher.close();
  }
  expect(await sentEventIds()).toContain(`${record.key_id}#2`);
  expect(await loggedActions(record.key_id)).toEqual(['disabled', 'created']);
});
