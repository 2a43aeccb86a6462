/**
 * `keys update | disable | enable | activity` end to end, each in a child process against this
 * file's tables, with the effect on the API; and tables that fit a terminal but stay whole when piped.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { handler as getBranch } from '../../functions/get-branch';
import { formatTable } from '../../lib/operator/format';
import { runCli } from '../support/cli';
import { mainBranch } from '../support/fixtures';
import { createKey, expectError, invoke, setUpBranches } from '../support/harness';

const BRANCH = mainBranch.id;

beforeAll(async () => {
  await setUpBranches();
});

const call = (key: string) => invoke(getBranch, { path: '/v1/branch', key, sourceIp: '198.51.100.7' });

describe('keys update, disable, enable, activity', () => {
  it('edits a key, disables and enables it, and lists who did it', async () => {
    const { key, record } = await createKey({ name: 'sync' });
    const keyId = record.key_id;
    const updated = await runCli([
      'keys',
      'update',
      keyId,
      '--branch',
      BRANCH,
      '--name',
      'billing',
      '--allow-ip',
      '203.0.113.0/24',
      '--json',
    ]);
    expect(updated.code).toBe(0);
    expect(updated.json).toMatchObject({ changed: true, key: { name: 'billing', allowed_ips: ['203.0.113.0/24'] } });
    expectError(await call(key), 403, 'ip_not_allowed');
    const cleared = await runCli(['keys', 'update', keyId, '--branch', BRANCH, '--no-allow-ip']);
    expect(cleared.stdout).toContain(`Updated key ${keyId}`);
    expect((await call(key)).statusCode).toBe(200);

    const disabled = await runCli(['keys', 'disable', keyId, '--branch', BRANCH]);
    expect(disabled).toMatchObject({ code: 0, stdout: `Disabled key ${keyId} (branch ${BRANCH})\n` });
    expectError(await call(key), 401, 'disabled_api_key');
    const again = await runCli(['keys', 'disable', keyId, '--branch', BRANCH, '--json']);
    expect(again.json.changed).toBe(false);
    expect((await runCli(['keys', 'enable', keyId, '--branch', BRANCH])).code).toBe(0);
    expect((await call(key)).statusCode).toBe(200);

    const activity = await runCli(['keys', 'activity', '--branch', BRANCH, '--key', keyId, '--json']);
    expect(activity.code).toBe(0);
    expect(activity.json.map((e: { action: string }) => e.action)).toEqual([
      'enabled',
      'disabled',
      'updated',
      'updated',
      'created',
    ]);
    // Created by the test's fixture (no actor); every CLI action by the OS user.
    expect(activity.json.slice(0, 4).map((e: { actor: string }) => e.actor)).toEqual(
      Array(4).fill(userInfo().username),
    );
    const text = await runCli(['keys', 'activity', '--branch', BRANCH, '--key', keyId]);
    // With --key, no KEY column: every row is that key's.
    expect(text.stdout).toMatch(/^TIME \(UTC\)\s+ACTION\s+NAME\s+WHO$/m);
    const branchLog = await runCli(['keys', 'activity', '--branch', BRANCH]);
    expect(branchLog.stdout).toMatch(/^TIME \(UTC\)\s+ACTION\s+KEY\s+NAME\s+WHO$/m);
    expect(text.stdout).toContain('\n  name: sync → billing\n  allowed_ips: - → 203.0.113.0/24\n');
  });

  it('refuses bad input and refused actions with one line, or a JSON error with a stable code', async () => {
    const { record } = await createKey();
    const nothing = await runCli(['keys', 'update', record.key_id, '--branch', BRANCH, '--json']);
    expect(nothing.code).toBe(1);
    expect(JSON.parse(nothing.stderr.trim().split('\n').pop()!)).toMatchObject({
      error: { code: 'invalid_input', field: 'key' },
    });
    await runCli(['keys', 'revoke', record.key_id, '--branch', BRANCH]);
    const refused = await runCli(['keys', 'enable', record.key_id, '--branch', BRANCH]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`error: Key ${record.key_id} cannot be enabled: it is revoked`);
    const refusedJson = await runCli(['keys', 'update', record.key_id, '--branch', BRANCH, '--name', 'x', '--json']);
    expect(JSON.parse(refusedJson.stderr.trim().split('\n').pop()!).error.code).toBe('key_not_changeable');
  });
});

describe('keys list filters, update output and default names', () => {
  it('a key made without --name gets a name no other key of the branch has', async () => {
    const made = [];
    for (let i = 0; i < 3; i += 1) {
      made.push((await runCli(['keys', 'create', '--branch', BRANCH, '--scopes', 'read', '--json'])).json);
    }
    const names = made.map((key: { name: string }) => key.name);
    for (const name of names) expect(name).toMatch(/^API key \d+$/);
    const listed = (await runCli(['keys', 'list', '--branch', BRANCH, '--json'])).json as { name: string }[];
    for (const name of names) expect(listed.filter((key) => key.name === name)).toHaveLength(1);
  });

  it('lists only the keys of a status and a name', async () => {
    const { record } = await createKey({ name: 'Filter Me billing' });
    await createKey({ name: 'filter me reports' });
    await runCli(['keys', 'disable', record.key_id, '--branch', BRANCH]);
    const byName = await runCli(['keys', 'list', '--branch', BRANCH, '--name', 'FILTER ME', '--json']);
    expect(byName.json.map((key: { name: string }) => key.name).sort()).toEqual([
      'Filter Me billing',
      'filter me reports',
    ]);
    const both = await runCli(['keys', 'list', '--branch', BRANCH, '--status', 'disabled', '--name', 'filter me']);
    expect(both.code).toBe(0);
    expect(both.stdout).toContain('Filter Me billing');
    expect(both.stdout).not.toContain('filter me reports');
    const none = await runCli(['keys', 'list', '--branch', BRANCH, '--status', 'revoked', '--name', 'filter me']);
    expect(none.stdout.trim()).toBe(`No keys of branch ${BRANCH} match`);
    const bad = await runCli(['keys', 'list', '--branch', BRANCH, '--status', 'sleeping']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('Allowed choices are active, grace, disabled, expired, revoked');
  });

  it('finds a key from the start of its value or its whole value, and from nothing else of it', async () => {
    const { key, record } = await createKey({ name: 'found by value' });
    const listed = async (...args: string[]) =>
      (await runCli(['keys', 'list', '--branch', BRANCH, ...args, '--json'])).json.map(
        (k: { key_id: string }) => k.key_id,
      );
    expect(await listed('--value-prefix', key.slice(0, 8))).toContain(record.key_id);
    // The whole value is hashed and matched: its own key only.
    expect(await listed('--value-prefix', key)).toEqual([record.key_id]);
    // Another whole value with the same start is no key of the branch.
    const other = `${key.slice(0, 8)}${'A'.repeat(key.length - 8)}`;
    expect(await listed('--value-prefix', other)).toEqual([]);
    const table = await runCli(['keys', 'list', '--branch', BRANCH, '--value-prefix', key.slice(0, 8)]);
    expect(table.stdout).toContain(`${key.slice(0, 8)}…`);
    expect(table.stdout).not.toContain(key);
  });

  it('keys update prints the key as it now is', async () => {
    const { record } = await createKey({ name: 'before' });
    const updated = await runCli([
      ...['keys', 'update', record.key_id, '--branch', BRANCH, '--name', 'after', '--rate-limit', '20/s'],
      ...['--allow-ip', '203.0.113.0/24'],
    ]);
    expect(updated.code).toBe(0);
    const text = updated.stdout;
    expect(text).toContain(`Updated key ${record.key_id} (branch ${BRANCH}); it is now:`);
    expect(text).toMatch(/name: +after/);
    expect(text).toMatch(/scopes: +read/);
    expect(text).toMatch(/from: +203\.0\.113\.0\/24/);
    expect(text).toMatch(/rate limit: 20\/s/);
    expect(text).toMatch(/expires: +never/);
  });
});

describe('key events with no destination', () => {
  const NO_DESTINATION = { KEY_EVENT_BUS_NAME: undefined, KEY_EVENTS_FILE: undefined };

  it('a key action warns once on stderr where events would go and how to set it', async () => {
    const { record } = await createKey();
    const disabled = await runCli(['keys', 'disable', record.key_id, '--branch', BRANCH], NO_DESTINATION);
    expect(disabled.code).toBe(0);
    const warnings = disabled.stderr.split('\n').filter((line) => line.startsWith('warning:'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/KEY_EVENT_BUS_NAME .*bus.*KEY_EVENTS_FILE/);
    // A read is no key action; with a destination set, nothing to warn about.
    const listed = await runCli(['keys', 'list', '--branch', BRANCH], NO_DESTINATION);
    expect(listed.stderr).not.toContain('warning:');
    const dir = await mkdtemp(join(tmpdir(), 'key-events-'));
    const enabled = await runCli(['keys', 'enable', record.key_id, '--branch', BRANCH], {
      KEY_EVENTS_FILE: join(dir, 'events.jsonl'),
    });
    expect(enabled.code).toBe(0);
    expect(enabled.stderr).not.toContain('warning:');
  });
});

describe('tables and the terminal width', () => {
  const header = ['ID', 'NAME', 'PATH'];
  const rows = [['key_1', 'a name that is rather long for a column', '/v1/branch?with=a&very=long&query=string']];

  it('piped (no width): every cell whole', () => {
    expect(formatTable(header, rows).text).toContain(rows[0]![2]);
  });

  it.each([40, 60, 80])('fits %i columns, cutting the widest cells with …', (width) => {
    const lines = formatTable(header, rows, width).text.split('\n');
    for (const line of lines) expect([...line].length).toBeLessThanOrEqual(width);
    expect(lines[1]).toContain('…');
    expect(lines[1]!.startsWith('key_1')).toBe(true);
  });

  it('leaves out the droppable columns, least important first, while the table does not fit', () => {
    const wide = ['ID', 'NAME', 'STATUS', 'A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'I'];
    const row = wide.map((name) => `${name.toLowerCase()}-value-that-is-long`);
    const text = formatTable(wide, [row], 80, ['I', 'H', 'G', 'F', 'E', 'D']).text;
    const lines = text.split('\n');
    for (const line of lines) expect([...line].length).toBeLessThanOrEqual(80);
    // Six droppable columns, all needed to go; the six kept are then cut to fit.
    expect(lines[0]).toMatch(/^ID\s+NAME\s+STATUS\s+A\s+B\s+C$/);
    expect(lines[1]).toContain('…');
    expect(lines.at(-1)).toBe('(not shown at this width: D, E, F, G, H, I; --json has all)');
    // Dropping stops as soon as the rest fits whole.
    const some = formatTable(wide, [row], 230, ['I', 'H', 'G', 'F', 'E', 'D']).text.split('\n');
    expect(some.at(-1)).toBe('(not shown at this width: H, I; --json has all)');
    expect(some[1]).not.toContain('…');
    // With room for every column nothing is left out.
    expect(formatTable(wide, [row], 400, ['I']).text).not.toContain('not shown');
  });

  it('keeps escaped text safe when it cuts it', () => {
    const text = formatTable(['X'], [['\u001b[31m'.repeat(20)]], 12).text;
    expect(text).not.toContain('\u001b');
  });

  it('the CLI leaves piped tables whole', async () => {
    await createKey({ name: 'n'.repeat(150) });
    const listed = await runCli(['keys', 'list', '--branch', BRANCH]);
    expect(listed.stdout).toContain('n'.repeat(150));
  });
});
