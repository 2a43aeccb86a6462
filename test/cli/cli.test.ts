/**
 * The `branch-api` CLI end to end: each command in a child process, against the embedded
 * DynamoDB of the test run and this file's own tables (env from test/support/env.ts).
 */
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashApiKey, isWellFormedApiKey } from '../../shared/domain/api-key';
import { runCli, PROJECT_ROOT } from '../support/cli';
import { FAST_FAILURE_ENV, fixtureBranchData, fixtureKeys, fixtureUsage } from '../support/harness';

const DEMO_SEED = join(PROJECT_ROOT, 'seed', 'demo.json');
let tmp: string;

const oneLineError = (stderr: string) => {
  const lines = stderr.split('\n').filter((line) => line && !line.includes('nodedir'));
  expect(lines.length).toBeGreaterThanOrEqual(1);
  expect(lines[0]).toMatch(/^error: /);
  expect(stderr).not.toMatch(/\n\s+at /); // no stack trace
  return lines[0];
};

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'branch-api-cli-'));
});

describe('tables create', () => {
  it('creates the tables, then reports them as already there', async () => {
    const first = await runCli(['tables', 'create', '--json']);
    expect(first.code).toBe(0);
    expect(first.json.created.sort()).toEqual(
      [
        process.env.KEYS_TABLE,
        process.env.USAGE_TABLE,
        process.env.BRANCH_DATA_TABLE,
        process.env.ROLLUPS_TABLE,
        process.env.RATE_LIMITS_TABLE,
        process.env.ACTIVITY_TABLE,
      ].sort(),
    );
    const again = await runCli(['tables', 'create']);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('Created: none');
  });
});

describe('seed', () => {
  it('loads a file and is idempotent', async () => {
    const first = await runCli(['seed', DEMO_SEED, '--json']);
    expect(first.code).toBe(0);
    expect(first.json).toEqual({ branch_ids: ['br_demo', 'br_second'], branches: 2, members: 6, payment_providers: 5 });
    const before = await fixtureBranchData.listMembers('br_demo', { limit: 100 });
    const again = await runCli(['seed', DEMO_SEED]);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('Loaded 2 branch(es), 6 member(s), 5 payment provider(s)');
    expect(await fixtureBranchData.listMembers('br_demo', { limit: 100 })).toEqual(before);
    expect((await fixtureBranchData.listActiveProviders('br_demo', { limit: 100 })).items.map((p) => p.id)).toEqual([
      'pp_adyen',
      'pp_mollie',
      'pp_stripe',
    ]);
  });

  it('writes nothing from an invalid file and names each bad entry', async () => {
    const file = join(tmp, 'bad.json');
    await writeFile(
      file,
      JSON.stringify({
        branches: [
          {
            id: 'br_bad_file',
            name: 'Bad',
            business_name: 'Bad B.V.',
            timezone: 'Europe/Amsterdam',
            currency: 'EUR',
            address: { line1: 'x', city: 'y', postal_code: 'z', country: 'NL' },
            members: [{ id: 'mem_1', name: 'A', email: 'not-an-email', role: 'owner' }],
            payment_providers: [{ id: 'pp 1', provider: 'stripe', name: 'S', active: true }],
          },
        ],
      }),
    );
    const result = await runCli(['seed', file]);
    expect(result.code).toBe(1);
    const message = oneLineError(result.stderr);
    expect(message).toContain('branches.0.members.0.email');
    expect(message).toContain('branches.0.payment_providers.0.id');
    expect(await fixtureBranchData.getBranch('br_bad_file')).toBeUndefined();
  });

  it('refuses an unreadable file and a file that is not JSON', async () => {
    const missing = await runCli(['seed', join(tmp, 'missing.json')]);
    expect(missing.code).toBe(1);
    expect(oneLineError(missing.stderr)).toContain('Cannot read seed file');
    const notJson = join(tmp, 'not.json');
    await writeFile(notJson, '{ branches: ');
    const broken = await runCli(['seed', notJson]);
    expect(broken.code).toBe(1);
    expect(oneLineError(broken.stderr)).toContain('is not valid JSON');
  });
});

describe('keys', () => {
  const createDemoBranchKey = (...args: string[]) => runCli(['keys', 'create', '--branch', 'br_demo', ...args]);

  it('creates a key, printing its value once, storing only its hash', async () => {
    const result = await createDemoBranchKey(
      ...['--scopes', 'read,team:read', '--expires', '2099-01-01T00:00:00Z', '--name', 'ci', '--json'],
    );
    expect(result.code).toBe(0);
    const { key, key_id, scopes, expires_at, branch_id, name } = result.json;
    expect(isWellFormedApiKey(key)).toBe(true);
    expect({ scopes, expires_at, branch_id, name }).toEqual({
      scopes: ['read', 'team:read'],
      expires_at: '2099-01-01T00:00:00.000Z',
      branch_id: 'br_demo',
      name: 'ci',
    });
    const stored = await fixtureKeys.getByHash(hashApiKey(key));
    expect(stored?.key_id).toBe(key_id);
    expect(JSON.stringify(stored)).not.toContain(key);
  });

  it('prints the key once in readable form too', async () => {
    const result = await runCli(['keys', 'create', '--branch', 'br_demo', '--scopes', 'read']);
    expect(result.code).toBe(0);
    expect(result.stdout.match(/wsk_[0-9A-Za-z]{49}/g)).toHaveLength(1);
    expect(result.stdout).toContain('shown only once');
  });

  it.each([
    [['--scopes', 'read,admin'], 'Unknown scope "admin"'],
    [['--scopes', ''], '--scopes needs at least one'],
    [['--scopes', 'read', '--expires', 'next week'], '--expires must be an ISO 8601'],
    [['--scopes', 'read', '--expires', '2027-02-30'], '--expires must be an ISO 8601'],
    [['--scopes', 'read', '--expires', '2027-02-30T00:00:00Z'], '(February 2027 has 28 days)'],
    [['--scopes', 'read', '--expires', '2027-02-30T00:00:00+02:00'], '(February 2027 has 28 days)'],
    [['--scopes', 'read', '--expires', '2027-04-31'], '(April 2027 has 30 days)'],
    [['--scopes', 'read', '--expires', '2027-06-01T24:00:00Z'], '(the hour must be 00-23)'],
    [['--scopes', 'read,,'], '--scopes has an empty entry in "read,,"'],
    [['--scopes', 'read, ,team:read'], '--scopes has an empty entry in "read, ,team:read"'],
    [['--scopes', 'read', '--expires', '2001-01-01T00:00:00Z'], '--expires must be in the future'],
  ])('refuses bad input %j with one line', async (args, message) => {
    const result = await createDemoBranchKey(...args);
    expect(result.code).toBe(1);
    expect(oneLineError(result.stderr)).toContain(message);
  });

  it('accepts a real leap day', async () => {
    const result = await createDemoBranchKey('--scopes', 'read', '--expires', '2028-02-29', '--json');
    expect(result.code).toBe(0);
    expect(result.json.expires_at).toBe('2028-02-29T00:00:00.000Z');
  });

  it('refuses an unknown branch', async () => {
    const result = await runCli(['keys', 'create', '--branch', 'br_nowhere', '--scopes', 'read']);
    expect(result.code).toBe(1);
    expect(oneLineError(result.stderr)).toBe('error: Unknown branch "br_nowhere"');
  });

  it('lists and revokes keys', async () => {
    const created = (await runCli(['keys', 'create', '--branch', 'br_second', '--scopes', 'read', '--json'])).json;
    const listed = await runCli(['keys', 'list', '--branch', 'br_second', '--json']);
    expect(listed.code).toBe(0);
    const entry = listed.json.find((k: { key_id: string }) => k.key_id === created.key_id);
    expect(entry).toMatchObject({ status: 'active', last_used_at: null, start: created.key.slice(0, 8) });
    expect(listed.stdout).not.toContain(created.key);

    const readable = await runCli(['keys', 'list', '--branch', 'br_second']);
    expect(readable.stdout.split('\n')[0]).toMatch(
      /^ID\s+NAME\s+START\s+SCOPES\s+RATE LIMIT\s+STATUS\s+CREATED\s+EXPIRES\s+REVOKED\s+LAST USED\s+LAST REFUSED\s+ALLOWED IPS\s+ROLLED$/,
    );

    const revoked = await runCli(['keys', 'revoke', created.key_id, '--branch', 'br_second', '--json']);
    expect(revoked.code).toBe(0);
    expect(revoked.json).toMatchObject({ revoked_at: expect.any(String), already_revoked: false });
    const after = await runCli(['keys', 'list', '--branch', 'br_second', '--json']);
    expect(after.json.find((k: { key_id: string }) => k.key_id === created.key_id).status).toBe('revoked');

    // Revoking it again changes nothing and says so (exit 0: the key is revoked, as asked).
    const again = await runCli(['keys', 'revoke', created.key_id, '--branch', 'br_second']);
    expect(again.code).toBe(0);
    expect(again.stdout.trim()).toBe(
      `Key ${created.key_id} (branch br_second) was already revoked at ${revoked.json.revoked_at}; nothing changed`,
    );
    const againJson = await runCli(['keys', 'revoke', created.key_id, '--branch', 'br_second', '--json']);
    expect(againJson.json).toMatchObject({ revoked_at: revoked.json.revoked_at, already_revoked: true });
  });

  it('refuses to revoke a key of another branch exactly as an unknown key id', async () => {
    const other = (await runCli(['keys', 'create', '--branch', 'br_second', '--scopes', 'read', '--json'])).json;
    const revoke = await runCli(['keys', 'revoke', other.key_id, '--branch', 'br_demo']);
    expect(revoke.code).toBe(1);
    expect(oneLineError(revoke.stderr)).toBe(`error: Unknown key id "${other.key_id}" for branch "br_demo"`);
    const listed = await runCli(['keys', 'list', '--branch', 'br_second', '--json']);
    expect(listed.json.find((k: { key_id: string }) => k.key_id === other.key_id).status).toBe('active');
    const missing = await runCli(['keys', 'revoke', other.key_id]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("required option '--branch <id>' not specified");
  });

  it('refuses to revoke an unknown key id and to list an unknown branch', async () => {
    const revoke = await runCli(['keys', 'revoke', 'key_doesnotexist', '--branch', 'br_demo']);
    expect(revoke.code).toBe(1);
    expect(oneLineError(revoke.stderr)).toBe('error: Unknown key id "key_doesnotexist" for branch "br_demo"');
    const list = await runCli(['keys', 'list', '--branch', 'br_nowhere']);
    expect(list.code).toBe(1);
    expect(oneLineError(list.stderr)).toBe('error: Unknown branch "br_nowhere"');
  });

  it('says which option is missing', async () => {
    const result = await runCli(['keys', 'create', '--scopes', 'read']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("required option '--branch <id>' not specified");
  });
});

describe('usage', () => {
  let keyA: string;
  let keyB: string;

  beforeAll(async () => {
    keyA = (await fixtureKeys.create({ branchId: 'br_demo', scopes: ['read'] })).record.key_id;
    keyB = (await fixtureKeys.create({ branchId: 'br_demo', scopes: ['read'] })).record.key_id;
    const statuses = [200, 200, 200, 404, 401, 200, 403, 200, 200, 400];
    for (const [i, status] of statuses.entries()) {
      await fixtureUsage.put(
        {
          key_id: i % 2 === 0 ? keyA : keyB,
          branch_id: 'br_demo',
          method: 'GET',
          path: '/api/v1/branch',
          route: 'GET /v1/branch',
          status,
          response_time_ms: i + 1,
          timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
          request_id: `req-${i}`,
        },
        90,
      );
    }
  });

  it('shows the log newest first with a summary', async () => {
    const result = await runCli(['usage', '--branch', 'br_demo', '--json']);
    expect(result.code).toBe(0);
    expect(result.json.records.map((r: { request_id: string }) => r.request_id)).toEqual(
      Array.from({ length: 10 }, (_, i) => `req-${9 - i}`),
    );
    expect(result.json.summary).toEqual({
      count: 10,
      by_status: { 200: 6, 400: 1, 401: 1, 403: 1, 404: 1 },
      p50_ms: 5,
      p95_ms: 10,
      complete: true,
    });
    const readable = await runCli(['usage', '--branch', 'br_demo']);
    expect(readable.stdout).toContain('10 call(s) kept — 200: 6, 400: 1, 401: 1, 403: 1, 404: 1');
    expect(readable.stdout).toContain('p50 ≤5 ms, p95 ≤10 ms');
  });

  it('filters by key, time and count', async () => {
    const byKey = await runCli(['usage', '--branch', 'br_demo', '--key', keyB, '--json']);
    expect(byKey.json.records.map((r: { request_id: string }) => r.request_id)).toEqual([
      'req-9',
      'req-7',
      'req-5',
      'req-3',
      'req-1',
    ]);
    const since = await runCli(['usage', '--branch', 'br_demo', '--since', '2026-01-01T00:00:07Z', '--json']);
    expect(since.json.summary.count).toBe(3);
    const limited = await runCli(['usage', '--branch', 'br_demo', '--limit', '2', '--json']);
    expect(limited.json.records.map((r: { request_id: string }) => r.request_id)).toEqual(['req-9', 'req-8']);
    // The summary counts every call of the period, not the page shown.
    expect(limited.json.summary).toMatchObject({ count: 10, by_status: { 200: 6, 400: 1, 401: 1, 403: 1, 404: 1 } });
    const readable = await runCli(['usage', '--branch', 'br_demo', '--limit', '2']);
    expect(readable.stdout).toContain('10 call(s) kept — 200: 6');
    expect(readable.stdout).toContain('showing the newest 2');
  });

  it.each([
    [['--since', 'yesterday'], '--since must be an ISO 8601'],
    [['--since', '2026-02-29T10:00:00+01:00'], '(February 2026 has 28 days)'],
    [['--key', 'key_unknown'], 'Unknown key id "key_unknown" for branch "br_demo"'],
  ])('refuses bad input %j', async (args, message) => {
    const result = await runCli(['usage', '--branch', 'br_demo', ...args]);
    expect(result.code).toBe(1);
    expect(oneLineError(result.stderr)).toContain(message);
  });

  it('refuses a bad limit and an unknown branch', async () => {
    const limit = await runCli(['usage', '--branch', 'br_demo', '--limit', '0']);
    expect(limit.code).toBe(1);
    expect(limit.stderr).toContain('must be a whole number');
    const branch = await runCli(['usage', '--branch', 'br_nowhere']);
    expect(branch.code).toBe(1);
    expect(oneLineError(branch.stderr)).toBe('error: Unknown branch "br_nowhere"');
  });
});

describe('the command line itself', () => {
  it('prints its version', async () => {
    const result = await runCli(['--version']);
    expect(result.code).toBe(0);
    expect(result.stdout.trim()).toBe(JSON.parse(await readFile(join(PROJECT_ROOT, 'package.json'), 'utf8')).version);
  });

  it('marks required options and shows defaults in --help', async () => {
    const create = await runCli(['keys', 'create', '--help']);
    expect(create.code).toBe(0);
    expect(create.stdout).toMatch(/--branch <id>\s+branch the key belongs to \(required\)/);
    expect(create.stdout).toMatch(/--name <label>\s+a label to tell keys apart \(default: API key N\)/);
    expect(create.stdout).not.toMatch(/--expires[^\n]*\(required\)/);
    expect((await runCli(['keys', 'revoke', '--help'])).stdout).toMatch(/--branch <id>.*\(required\)/);
    expect((await runCli(['usage', '--help'])).stdout).toMatch(/--limit <n>.*\(default: 50\)/);
    expect((await runCli(['serve', '--help'])).stdout).toMatch(
      /--seed <file>\s+seed file to load \(default: seed\/demo.json\)/,
    );
  });

  it.each<[string[], Record<string, unknown>, Record<string, string>?]>([
    [
      ['keys', 'list', '--branch', 'br_nowhere', '--json'],
      { code: 'unknown_branch', field: 'branch', message: 'Unknown branch "br_nowhere"' },
    ],
    [
      ['keys', 'create', '--scopes', 'read', '--json'],
      { code: 'usage_error', message: "required option '--branch <id>' not specified" },
    ],
    [
      ['usage', '--branch', 'br_demo', '--limit', '0', '--json'],
      {
        code: 'usage_error',
        message: "option '--limit <n>' argument '0' is invalid. must be a whole number from 1 to 10000",
      },
    ],
    [
      ['keys', 'list', '--json', '--branch', 'br_demo', '--bogus'],
      { code: 'usage_error', message: "unknown option '--bogus'" },
    ],
    [
      ['keys', 'revoke', 'key_x', '--branch', 'br_demo', '--json'],
      { code: 'unknown_key', field: 'key_id', message: 'Unknown key id "key_x" for branch "br_demo"' },
    ],
    [
      ['keys', 'create', '--branch', 'br_demo', '--scopes', 'admin', '--json'],
      {
        code: 'invalid_input',
        field: 'scopes',
        message: 'Unknown scope "admin"; allowed: read, write, webhooks, team:read, billing:read',
      },
    ],
    [
      ['keys', 'list', '--branch', 'br_demo', '--json'],
      { code: 'unavailable', message: expect.stringContaining('not reachable') },
      { DYNAMODB_ENDPOINT: 'http://127.0.0.1:9', ...FAST_FAILURE_ENV },
    ],
  ])('with --json, %j fails with one JSON error (stable code) on stderr and exit 1', async (args, error, env = {}) => {
    const result = await runCli(args, env);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    const lines = result.stderr.split('\n').filter((line) => line && !line.includes('nodedir'));
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toEqual({ error });
  });
});

describe('targets', () => {
  it.each(['localhost:8000', 'http://', 'ftp://x', 'http:x'])(
    'names a malformed DYNAMODB_ENDPOINT=%s as such',
    async (endpoint) => {
      const result = await runCli(['keys', 'list', '--branch', 'br_demo'], { DYNAMODB_ENDPOINT: endpoint });
      expect(result.code).toBe(1);
      expect(oneLineError(result.stderr)).toBe(
        `error: Environment variable DYNAMODB_ENDPOINT must be an http:// or https:// URL such as http://127.0.0.1:8000, got "${endpoint}"`,
      );
    },
  );

  it('says clearly when no DynamoDB is reachable', async () => {
    const result = await runCli(['keys', 'list', '--branch', 'br_demo'], {
      DYNAMODB_ENDPOINT: 'http://127.0.0.1:9',
      DYNAMODB_MAX_ATTEMPTS: '1',
    });
    expect(result.code).toBe(1);
    expect(oneLineError(result.stderr)).toContain('DynamoDB is not reachable');
  });
});
