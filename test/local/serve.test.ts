/**
 * `npm start` (= `branch-api serve`) as a user runs it: a child process on free ports, its
 * printed demo key used for a real request, Ctrl-C (SIGINT) ending it with exit code 0.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { sign } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { once } from 'node:events';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createOperatorContext } from '../../lib/operator/context';
import { summarizeUsage } from '../../lib/operator/usage-rollups';
import { hourOf } from '../../shared/domain/rollups';
import { generateApiKey } from '../../shared/domain/api-key';
import { MAX_REPORT_BYTES } from '../../shared/domain/secret-scanning';
import { CLI, PROJECT_ROOT, runCli } from '../support/cli';
import { expectToMatchContract } from '../support/contract';
import { normalizeBanner, readmeBlock } from '../support/readme';

const startServe = (env: Record<string, string>, args: string[] = []) => {
  const child = spawn(process.execPath, [CLI, 'serve', ...args], {
    cwd: PROJECT_ROOT,
    env: {
      ...process.env,
      DYNAMODB_ENDPOINT: '',
      KEYS_TABLE: '',
      USAGE_TABLE: '',
      BRANCH_DATA_TABLE: '',
      CONSOLE_PORT: '0',
      RATE_LIMITS_TABLE: '',
      ...env,
    },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += String(chunk)));
  child.stderr.on('data', (chunk) => (stderr += String(chunk)));
  const exited = once(child, 'exit') as Promise<[number | null, string | null]>;
  const ready = new Promise<string>((resolve, reject) => {
    child.stdout.on('data', () => stdout.includes('Press Ctrl-C') && resolve(stdout));
    void exited.then(() => reject(new Error(`serve exited early: ${stderr}`)));
  });
  ready.catch(() => undefined); // a test that expects an early exit never awaits `ready`
  return { child, ready, exited, output: () => ({ stdout, stderr }) };
};

/** GET through the running server; the response must match the OpenAPI document. */
const get = async (baseUrl: string, path: string, key?: string) => {
  const response = await fetch(`${baseUrl}${path}`, key ? { headers: { authorization: `Bearer ${key}` } } : {});
  const body = await response.text();
  const headers = Object.fromEntries(response.headers);
  expectToMatchContract({ method: 'GET', path, statusCode: response.status, headers, body });
  return { status: response.status, json: JSON.parse(body) as any };
};

let running: ChildProcess | undefined;
afterEach(() => {
  if (running && running.exitCode === null) running.kill('SIGKILL');
});

it('serves the API with a working demo key and stops cleanly on Ctrl-C', async () => {
  const serve = startServe({ PORT: '0', DYNAMODB_PORT: '0' });
  running = serve.child;
  const stdout = await serve.ready;
  const baseUrl = /running at (http:\/\/127\.0\.0\.1:\d+\/api)/.exec(stdout)?.[1];
  const key = /export BRANCH_API_KEY=(wsk_[0-9A-Za-z]+)/.exec(stdout)?.[1];
  expect(baseUrl).toBeDefined();
  expect(key).toBeDefined();
  expect(stdout).toMatch(/Settings console: http:\/\/127\.0\.0\.1:\d+\/\?token=[\w-]{43}\n/);
  // The README shows this very banner.
  expect(normalizeBanner(stdout)).toBe(normalizeBanner(readmeBlock('banner')));
  expect(stdout).toContain(`curl -s -H "Authorization: Bearer $BRANCH_API_KEY" ${baseUrl}/v1/branch`);
  // The key's value is printed once (in the export line), and it expires a day after the start.
  expect(stdout.split(key!)).toHaveLength(2);
  const expires = /Demo key for branch br_demo \(scope: read, expires (\S+)\):/.exec(stdout)?.[1];
  expect(Date.parse(expires!) - Date.now()).toBeGreaterThan(23.9 * 3600_000);
  expect(Date.parse(expires!) - Date.now()).toBeLessThanOrEqual(24 * 3600_000);

  const ok = await get(baseUrl!, '/v1/branch', key);
  expect(ok.status).toBe(200);
  expect(ok.json).toMatchObject({ id: 'br_demo', object: 'branch' });
  const providers = await get(baseUrl!, '/v1/payment-providers', key);
  expect(providers.json.data.map((p: { id: string }) => p.id)).toEqual(['pp_adyen', 'pp_mollie', 'pp_stripe']);
  const noKey = await get(baseUrl!, '/v1/branch');
  expect(noKey.status).toBe(401);

  serve.child.kill('SIGINT');
  const [code] = await serve.exited;
  expect({ code, stderr: code === 0 ? '' : serve.output().stderr }).toEqual({ code: 0, stderr: '' });
});

it('reports a busy port in one line, without a stack trace', async () => {
  const blocker = createServer();
  blocker.listen(0, '127.0.0.1');
  await once(blocker, 'listening');
  const port = (blocker.address() as { port: number }).port;
  try {
    const serve = startServe({ PORT: String(port), DYNAMODB_PORT: '0' });
    running = serve.child;
    const [code] = await serve.exited;
    expect(code).toBe(1);
    const { stderr } = serve.output();
    expect(
      stderr
        .trim()
        .split('\n')
        .filter((l) => !l.includes('nodedir')),
    ).toEqual([`error: Port ${port} on 127.0.0.1 is already in use; set PORT to another port`]);
  } finally {
    blocker.close();
  }
});

it('keeps its data across restarts with --data-dir, with one active demo key', async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'branch-api-data-'));
  const run = async () => {
    const serve = startServe({ PORT: '0', DYNAMODB_PORT: '0' }, ['--data-dir', dataDir]);
    running = serve.child;
    const stdout = await serve.ready;
    const dynamoEndpoint = /DynamoDB: {2}(http:\/\/\S+)/.exec(stdout)![1]!;
    return {
      serve,
      stdout,
      baseUrl: /running at (http:\/\/127\.0\.0\.1:\d+\/api)/.exec(stdout)![1]!,
      key: /export BRANCH_API_KEY=(wsk_[0-9A-Za-z]+)/.exec(stdout)![1]!,
      // The operator CLI against this run's DynamoDB and the local table names.
      cli: (args: string[]) =>
        runCli(args, { DYNAMODB_ENDPOINT: dynamoEndpoint, KEYS_TABLE: '', USAGE_TABLE: '', BRANCH_DATA_TABLE: '' }),
    };
  };
  try {
    const first = await run();
    const kept = (await first.cli(['keys', 'create', '--branch', 'br_demo', '--scopes', 'read', '--json'])).json;
    first.serve.child.kill('SIGINT');
    await first.serve.exited;

    const second = await run();
    expect(second.stdout).toContain('(revoked 1 demo key(s) of earlier starts)');
    // The data survived: the operator's key still works; the first start's demo key does not.
    expect((await get(second.baseUrl, '/v1/branch', kept.key)).status).toBe(200);
    expect((await get(second.baseUrl, '/v1/branch', second.key)).status).toBe(200);
    const old = await get(second.baseUrl, '/v1/branch', first.key);
    expect([old.status, old.json.error.code]).toEqual([401, 'revoked_api_key']);

    const listed = (await second.cli(['keys', 'list', '--branch', 'br_demo', '--json'])).json as {
      name: string;
      status: string;
      start: string;
    }[];
    const active = listed.filter((k) => k.status === 'active');
    expect(active.filter((k) => k.name.startsWith('demo key (npm start')).map((k) => k.start)).toEqual([
      second.key.slice(0, 8),
    ]);
    expect(active).toHaveLength(2); // the demo key and the operator's key
    second.serve.child.kill('SIGINT');
    expect((await second.serve.exited)[0]).toBe(0);
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
});

it('uses an external DynamoDB when DYNAMODB_ENDPOINT is set', async () => {
  const serve = startServe({
    PORT: '0',
    DYNAMODB_PORT: '0',
    DYNAMODB_ENDPOINT: process.env.DYNAMODB_ENDPOINT!,
    KEYS_TABLE: `${process.env.KEYS_TABLE}-serve`,
    USAGE_TABLE: `${process.env.USAGE_TABLE}-serve`,
    BRANCH_DATA_TABLE: `${process.env.BRANCH_DATA_TABLE}-serve`,
    RATE_LIMITS_TABLE: `${process.env.RATE_LIMITS_TABLE}-serve`,
  });
  running = serve.child;
  const stdout = await serve.ready;
  // The usage change feed takes the writes in front of it (docs/usage-rollups.md).
  expect(stdout).toContain(`(external ${process.env.DYNAMODB_ENDPOINT} behind the usage change feed)`);
  const baseUrl = /running at (http:\/\/127\.0\.0\.1:\d+\/api)/.exec(stdout)![1]!;
  const key = /export BRANCH_API_KEY=(wsk_[0-9A-Za-z]+)/.exec(stdout)![1]!;
  const response = await get(baseUrl, '/v1/members', key);
  expect(response.status).toBe(200);
  serve.child.kill('SIGINT');
  expect((await serve.exited)[0]).toBe(0);
});

describe('a quiet terminal', () => {
  const requestsThrough = async (stdout: string, count: number) => {
    const baseUrl = /running at (http:\/\/127\.0\.0\.1:\d+\/api)/.exec(stdout)![1]!;
    const key = /export BRANCH_API_KEY=(wsk_[0-9A-Za-z]+)/.exec(stdout)![1]!;
    for (let i = 0; i < count; i += 1) {
      expect((await get(baseUrl, '/v1/branch', i % 2 ? key : undefined)).status).toBe(i % 2 ? 200 : 401);
    }
  };
  const logLines = async (file: string) =>
    (await readFile(file, 'utf8')).split('\n').filter((line) => line.startsWith('{"level"'));

  it('prints the banner and nothing per request; the logs go to the file the banner names', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'serve-log-'));
    const file = join(dir, 'api.log');
    try {
      const serve = startServe({ PORT: '0', DYNAMODB_PORT: '0', LOG_FILE: file, POWERTOOLS_LOG_LEVEL: 'INFO' });
      running = serve.child;
      const banner = await serve.ready;
      expect(banner).toContain(`Logs:      ${file}`);
      await requestsThrough(banner, 10);
      expect(serve.output().stdout).toBe(banner);
      // Each refused call logs an INFO line ("Call without a known key"): all of them in the file.
      expect((await logLines(file)).filter((line) => line.includes('"INFO"')).length).toBeGreaterThanOrEqual(5);
      serve.child.kill('SIGINT');
      expect((await serve.exited)[0]).toBe(0);
      expect(
        serve
          .output()
          .stderr.split('\n')
          .filter((line) => line.startsWith('{"level"')),
      ).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('--verbose writes the request logs to the terminal too', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'serve-log-'));
    const file = join(dir, 'api.log');
    try {
      const serve = startServe({ PORT: '0', DYNAMODB_PORT: '0', LOG_FILE: file, POWERTOOLS_LOG_LEVEL: 'INFO' }, [
        '--verbose',
      ]);
      running = serve.child;
      const banner = await serve.ready;
      await requestsThrough(banner, 4);
      const inFile = await logLines(file);
      expect(inFile.length).toBeGreaterThanOrEqual(2);
      expect(serve.output().stdout).toContain(inFile[inFile.length - 1]);
      serve.child.kill('SIGINT');
      expect((await serve.exited)[0]).toBe(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

it('revokes keys on reports signed with its own key pair: five at once right after the start, then 1 MB of tokens', async () => {
  const serve = startServe({ PORT: '0', DYNAMODB_PORT: '0', KEY_EVENTS_FILE: '', SECRET_SCANNING_KEYS_URL: '' });
  running = serve.child;
  const stdout = await serve.ready;
  const baseUrl = /running at (http:\/\/127\.0\.0\.1:\d+\/api)/.exec(stdout)![1]!;
  const key = /export BRANCH_API_KEY=(wsk_[0-9A-Za-z]+)/.exec(stdout)![1]!;
  const eventsFile = /Key events: (\S+)/.exec(stdout)![1]!;
  const signingKey = /Secret scanning reports: signed with (\S+)/.exec(stdout)![1]!;
  const dynamoEndpoint = /DynamoDB: {2}(http:\/\/\S+)/.exec(stdout)![1]!;
  expect(stdout).toContain(`KEY_EVENTS_FILE=${eventsFile}`);

  const path = '/security/secret-scanning';
  const postReport = async (entries: { token: string; type: string; url: string; source: string }[]) => {
    const body = JSON.stringify(entries);
    const signature = sign('sha256', Buffer.from(body), readFileSync(signingKey, 'utf8')).toString('base64');
    const response = await fetch(`${baseUrl}${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'github-public-key-identifier': 'branch-api-local',
        'github-public-key-signature': signature,
      },
      body,
    });
    const text = await response.text();
    expectToMatchContract({
      method: 'POST',
      path,
      statusCode: response.status,
      headers: Object.fromEntries(response.headers),
      body: text,
    });
    return { status: response.status, json: JSON.parse(text) };
  };
  // The first reports of a start share the read of the public keys that the first one began.
  const leak = [{ token: key, type: 'branch_api_key', url: 'https://github.com/o/r', source: 'content' }];
  const first = await Promise.all(Array.from({ length: 5 }, () => postReport(leak)));
  expect(first.map(({ status }) => status)).toEqual([200, 200, 200, 200, 200]);
  expect(first[0]!.json).toEqual([expect.objectContaining({ label: 'true_positive' })]);
  const after = await get(baseUrl, '/v1/branch', key);
  expect([after.status, after.json.error.code]).toEqual([401, 'revoked_api_key']);
  const events = readFileSync(eventsFile, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line));
  expect(events.map((event) => event['detail-type'])).toContain('Key Leaked');
  expect(readFileSync(eventsFile, 'utf8')).not.toContain(key);

  // 1 MB of tokens that are no key, two live keys at the end: answered in full within the
  // deployed function's timeout, which the local run's context counts down from.
  const cli = (args: string[]) =>
    runCli(args, { DYNAMODB_ENDPOINT: dynamoEndpoint, KEYS_TABLE: '', USAGE_TABLE: '', BRANCH_DATA_TABLE: '' });
  const live: string[] = [];
  for (let i = 0; i < 2; i += 1) {
    live.push((await cli(['keys', 'create', '--branch', 'br_demo', '--scopes', 'read', '--json'])).json.key);
  }
  const entry = (token: string) => ({ token, type: 't', url: 'u', source: 's' });
  const count = Math.floor(MAX_REPORT_BYTES / (JSON.stringify(entry(generateApiKey())).length + 1));
  const big = await postReport([
    ...Array.from({ length: count - 2 }, () => entry(generateApiKey())),
    ...live.map(entry),
  ]);
  expect(big.status).toBe(200);
  expect(big.json).toHaveLength(count);
  expect(big.json.slice(-2).map(({ label }: { label: string }) => label)).toEqual(['true_positive', 'true_positive']);
  for (const token of live) expect((await get(baseUrl, '/v1/branch', token)).status).toBe(401);

  serve.child.kill('SIGINT');
  expect((await serve.exited)[0]).toBe(0);
}, 120_000);

it('removes the temporary folders it made (store, logs, key events) on Ctrl-C, and keeps a named one', async () => {
  const serve = startServe({ PORT: '0', DYNAMODB_PORT: '0', KEY_EVENTS_FILE: '' });
  running = serve.child;
  const stdout = await serve.ready;
  const logFile = /Logs: {6}(\S+)/.exec(stdout)![1]!;
  const eventsFile = /Key events: (\S+)/.exec(stdout)![1]!;
  const scratch = dirname(logFile);
  expect([dirname(scratch), dirname(eventsFile)]).toEqual([tmpdir(), scratch]);
  expect(readdirSync(scratch)).toEqual(expect.arrayContaining(['branch-api.log', 'events.jsonl', 'store']));
  // Ctrl-C the moment the banner appears: the stop handler is there before the banner.
  serve.child.kill('SIGINT');
  const [first, firstSignal] = await serve.exited;
  expect({ first, firstSignal, stderr: first === 0 ? '' : serve.output().stderr }).toEqual({
    first: 0,
    firstSignal: null,
    stderr: '',
  });
  expect(existsSync(scratch)).toBe(false);

  const dataDir = await mkdtemp(join(tmpdir(), 'branch-api-named-'));
  try {
    const named = startServe({ PORT: '0', DYNAMODB_PORT: '0', KEY_EVENTS_FILE: '' }, ['--data-dir', dataDir]);
    running = named.child;
    await named.ready;
    named.child.kill('SIGINT');
    const [code, signal] = await named.exited;
    expect({ code, signal, stderr: code === 0 ? '' : named.output().stderr }).toEqual({
      code: 0,
      signal: null,
      stderr: '',
    });
    expect(readdirSync(dataDir)).toEqual(expect.arrayContaining(['branch-api.log', 'events.jsonl']));
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
});

describe('usage totals across restarts (--data-dir)', () => {
  const localTables = {
    KEYS_TABLE: '',
    USAGE_TABLE: '',
    BRANCH_DATA_TABLE: '',
    ROLLUPS_TABLE: '',
    RATE_LIMITS_TABLE: '',
    ACTIVITY_TABLE: '',
  };
  /** `npm start` on a data directory, with what a test needs of it. */
  const run = async (dataDir: string) => {
    const serve = startServe({ PORT: '0', DYNAMODB_PORT: '0', ...localTables }, ['--data-dir', dataDir]);
    running = serve.child;
    const stdout = await serve.ready;
    const baseUrl = /running at (http:\/\/127\.0\.0\.1:\d+\/api)/.exec(stdout)![1]!;
    const key = /export BRANCH_API_KEY=(wsk_[0-9A-Za-z]+)/.exec(stdout)![1]!;
    const endpoint = /DynamoDB: {2}(http:\/\/\S+)/.exec(stdout)![1]!;
    /** `count` calls with the demo key, all at once. */
    const calls = (count: number) =>
      Promise.all(
        Array.from({ length: count }, () =>
          fetch(`${baseUrl}/v1/branch`, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.text()),
        ),
      );
    return { serve, calls, endpoint };
  };
  /** Raw usage records and the calls the rollups count, once the rollups stop moving. */
  const totals = async (endpoint: string, made: number) => {
    const ctx = createOperatorContext({ ...process.env, ...localTables, DYNAMODB_ENDPOINT: endpoint });
    try {
      const since = hourOf(Date.now() - 3_600_000);
      let raw = 0;
      let position: string | undefined;
      do {
        const page = await ctx.usage.query({
          branchId: 'br_demo',
          since: new Date(since),
          limit: 1000,
          ...(position ? { position } : {}),
        });
        raw += page.records.length;
        position = page.nextPosition;
      } while (position);
      let counted = 0;
      for (let read = 0; read < 600; read += 1) {
        counted = (await summarizeUsage(ctx, { branchId: 'br_demo', since })).totals.calls;
        if (counted >= made) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      return { made, raw, counted };
    } finally {
      ctx.close();
    }
  };
  let dataDir: string;
  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'branch-api-restart-'));
  });
  afterEach(() => rm(dataDir, { recursive: true, force: true }));

  it('counts every call of a run after a restart: none is mistaken for one counted before', async () => {
    const first = await run(dataDir);
    await first.calls(40);
    first.serve.child.kill('SIGINT');
    expect((await first.serve.exited)[0]).toBe(0);
    const second = await run(dataDir);
    await second.calls(20);
    expect(await totals(second.endpoint, 60)).toEqual({ made: 60, raw: 60, counted: 60 });
    second.serve.child.kill('SIGINT');
    expect((await second.serve.exited)[0]).toBe(0);
  });

  it('after a SIGKILL, the next start recounts what the feed had not applied, and says so', async () => {
    const first = await run(dataDir);
    await first.calls(40);
    first.serve.child.kill('SIGKILL');
    await first.serve.exited;
    const second = await run(dataDir);
    await second.calls(20);
    expect(second.serve.output().stderr).toMatch(/stopped before its usage change feed had applied every call/);
    expect(await totals(second.endpoint, 60)).toEqual({ made: 60, raw: 60, counted: 60 });
    second.serve.child.kill('SIGINT');
    expect((await second.serve.exited)[0]).toBe(0);
  });
});
