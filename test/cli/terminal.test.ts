/**
 * Terminal escape injection: what callers and key holders stored (a request path, a key name) is
 * shown to an operator. The escaping itself, then the real CLI in a child process on hostile
 * records: its stdout holds no raw control or bidi character, the columns still line up, and
 * --json keeps the exact values. On the old code the CLI test fails: ESC, CR and BEL came out raw.
 */
import { escapeForTerminal, lines, terminal, terminalSafeJson } from '../../lib/operator/terminal';
import { formatTable } from '../../lib/operator/format';
import { runCli } from '../support/cli';
import { createTables, fixtureKeys, fixtureUsage, seedBranches } from '../support/harness';
import { mainBranch } from '../support/fixtures';

/** Any C0 control but the newline, DEL, C1, bidi embeddings/overrides/isolates/marks, U+2028/9. */
const RAW_CONTROL =
  // eslint-disable-next-line no-control-regex -- finding raw control characters is the point
  /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/u;

const HOSTILE_PATH =
  '/api/v1/branch\u001b[2J\rFORGED ROW\u001b]52;c;ZWNobyBoaQ==\u0007\u009b31m\u007f\n/next\u202e\u2066';
const HOSTILE_NAME = 'pos\u202egnp.exe\u2069 \u001b[8mhidden';

describe('escapeForTerminal', () => {
  it('writes every control and bidi character as visible, unambiguous text', () => {
    expect(escapeForTerminal('a\u001b[2Jb')).toBe('a\\x1b[2Jb');
    expect(escapeForTerminal('\r\n\t\u0000\u0007\u007f\u0085\u009b')).toBe('\\r\\n\\t\\x00\\x07\\x7f\\x85\\x9b');
    expect(escapeForTerminal('\u202a\u202e\u2066\u2069\u200f\u2028')).toBe(
      '\\u{202a}\\u{202e}\\u{2066}\\u{2069}\\u{200f}\\u{2028}',
    );
    // A literal backslash is doubled, so text that looks like an escape is told apart from one.
    expect(escapeForTerminal('\\x1b')).toBe('\\\\x1b');
    expect(escapeForTerminal('/api/v1/members?cursor=abc&limit=2 ünïcødé 漢字')).toBe(
      '/api/v1/members?cursor=abc&limit=2 ünïcødé 漢字',
    );
    expect(escapeForTerminal(HOSTILE_PATH)).not.toMatch(RAW_CONTROL);
  });

  it('escapes interpolated values but keeps the program’s own text and safe pieces', () => {
    const safe = lines([terminal`path: ${HOSTILE_PATH}`, terminal`count: ${3}`]);
    expect(safe.text.split('\n')).toHaveLength(2);
    expect(safe.text).not.toMatch(RAW_CONTROL);
    expect(terminal`${safe}`.text).toBe(safe.text); // not escaped twice
  });

  it('aligns table columns on the escaped text', () => {
    const table = formatTable(
      ['PATH', 'STATUS'],
      [
        [HOSTILE_PATH, '200'],
        ['/api/v1/branch', '404'],
      ],
    ).text.split('\n');
    expect(table).toHaveLength(3);
    expect(table.join('\n')).not.toMatch(RAW_CONTROL);
    const statusColumn = table[0]!.indexOf('STATUS');
    expect(table[1]!.indexOf('200')).toBe(statusColumn);
    expect(table[2]!.indexOf('404')).toBe(statusColumn);
  });

  it('keeps JSON exact while escaping what JSON.stringify leaves raw', () => {
    const value = { path: HOSTILE_PATH, name: HOSTILE_NAME };
    const json = terminalSafeJson(value);
    expect(JSON.parse(json)).toEqual(value);
    expect(json).not.toMatch(RAW_CONTROL);
    // JSON.stringify alone escapes C0 but not DEL, C1 or bidi characters.
    expect(JSON.stringify(value)).toMatch(/[\u007f\u009b\u202e]/u);
    // eslint-disable-next-line no-control-regex -- as above
    expect(JSON.stringify(value)).not.toMatch(/[\u0000-\u001f]/u);
  });
});

describe('the CLI on hostile stored values', () => {
  let keyId: string;

  beforeAll(async () => {
    await createTables();
    await seedBranches([mainBranch]);
    keyId = (await fixtureKeys.create({ branchId: mainBranch.id, scopes: ['read'], name: HOSTILE_NAME })).record.key_id;
    for (const [i, path] of [HOSTILE_PATH, '/api/v1/branch'].entries()) {
      await fixtureUsage.put(
        {
          key_id: keyId,
          branch_id: mainBranch.id,
          method: 'GET',
          path,
          // A path no route matched: the log shows its raw path (a matched one shows its route).
          route: i === 0 ? '$default' : 'GET /v1/branch',
          status: 404,
          response_time_ms: 3,
          timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
          request_id: `req-${i}`,
        },
        90,
      );
    }
  });

  it('usage shows the path escaped, one row per record, columns aligned', async () => {
    const result = await runCli(['usage', '--branch', mainBranch.id]);
    expect(result.code).toBe(0);
    expect(result.stdout).not.toMatch(RAW_CONTROL);
    expect(result.stdout).toContain(escapeForTerminal(HOSTILE_PATH));
    expect(result.stdout).toContain('\\x1b[2J\\rFORGED ROW\\x1b]52;c;ZWNobyBoaQ==\\x07');
    const table = result.stdout.trimEnd().split('\n').slice(-3);
    expect(table[0]).toMatch(/^TIME \(UTC\)\s+KEY\s+ROUTE/);
    const statusColumn = table[0]!.indexOf('STATUS');
    expect(table.slice(1).map((row) => row.slice(statusColumn, statusColumn + 3))).toEqual(['404', '404']);
  });

  it('keys list shows the name escaped', async () => {
    const result = await runCli(['keys', 'list', '--branch', mainBranch.id]);
    expect(result.code).toBe(0);
    expect(result.stdout).not.toMatch(RAW_CONTROL);
    expect(result.stdout).toContain('pos\\u{202e}gnp.exe\\u{2069} \\x1b[8mhidden');
  });

  it('--json keeps the exact values, with no raw control character either', async () => {
    const usage = await runCli(['usage', '--branch', mainBranch.id, '--json']);
    expect(usage.stdout).not.toMatch(RAW_CONTROL);
    expect(usage.json.records.map((r: { path: string }) => r.path)).toEqual(['/api/v1/branch', HOSTILE_PATH]);
    const keys = await runCli(['keys', 'list', '--branch', mainBranch.id, '--json']);
    expect(keys.stdout).not.toMatch(RAW_CONTROL);
    expect(keys.json.map((k: { name: string }) => k.name)).toEqual([HOSTILE_NAME]);
  });

  it('escapes values echoed in error messages too', async () => {
    const result = await runCli(['keys', 'list', '--branch', 'br_\u001b]52;c;eA==\u0007']);
    expect(result.code).toBe(1);
    expect(result.stderr).not.toMatch(RAW_CONTROL);
    expect(result.stderr).toContain('error: Unknown branch "br_\\x1b]52;c;eA==\\x07"');
  });
});
