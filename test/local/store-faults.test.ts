/**
 * The local stack when its store can't write (docs/decisions.md "Embedded DynamoDB"): `npm start`
 * on a real 24 MB tmpfs, mounted in a mount namespace of the stack's own (`unshare`, so nothing is
 * left mounted whatever happens), filled by a file the test writes and removes through
 * /proc/<pid>/root. And a second stack on the same data directory.
 */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, statfs, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOperatorContext } from '../../lib/operator/context';
import { summarizeUsage } from '../../lib/operator/usage-rollups';
import { tableDefinitions } from '../../shared/data/tables';
import { hourOf } from '../../shared/domain/rollups';
import { CLI, PROJECT_ROOT } from '../support/cli';

/** No table name of the test file's: the stack's own local names. */
const localTables = Object.fromEntries(tableDefinitions.map(({ envVar }) => [envVar, '']));

/** `branch-api serve` in a child process; `wrap` runs it under another command (unshare). */
const startServe = (args: string[], wrap: string[] = []) => {
  const [command, ...rest] = [...wrap, process.execPath, CLI, 'serve', ...args];
  const child = spawn(command!, rest, {
    cwd: PROJECT_ROOT,
    env: {
      ...process.env,
      ...localTables,
      DYNAMODB_ENDPOINT: '',
      PORT: '0',
      DYNAMODB_PORT: '0',
      CONSOLE_PORT: '0',
      KEY_EVENTS_FILE: '',
      SECRET_SCANNING_KEYS_URL: '',
      POWERTOOLS_LOG_LEVEL: 'INFO',
    },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += String(chunk)));
  child.stderr.on('data', (chunk) => (stderr += String(chunk)));
  const exited = once(child, 'exit') as Promise<[number | null, string | null]>;
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout.on('data', () => stdout.includes('Press Ctrl-C') && resolve());
    void exited.then(() => reject(new Error(`serve exited early: ${stderr}`)));
  });
  ready.catch(() => undefined);
  const banner = (pattern: RegExp) => pattern.exec(stdout)![1]!;
  return { child, ready, exited, banner, output: () => ({ stdout, stderr }) };
};

interface LogLine {
  message: string;
  request_id?: string;
  usage_record?: { request_id: string };
}

const running: ReturnType<typeof startServe>[] = [];
afterEach(() => {
  for (const serve of running.splice(0)) if (serve.child.exitCode === null) serve.child.kill('SIGKILL');
});

/** Whether this machine lets a process mount a tmpfs of its own (a user and mount namespace). */
const tmpfsFor = (dir: string) => [
  'unshare',
  '--user',
  '--map-root-user',
  '--mount',
  'sh',
  '-c',
  `mount -t tmpfs -o size=24m tmpfs '${dir}' && exec "$@"`,
  'sh',
];
const canMountTmpfs = spawnSync(tmpfsFor(tmpdir())[0]!, [...tmpfsFor(tmpdir()).slice(1), 'true']).status === 0;

(canMountTmpfs ? describe : describe.skip)('a full disk under the store (a real tmpfs)', () => {
  it('answers 503 and the console says why; both recover once space frees, and every answered call is accounted for', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'branch-api-full-'));
    try {
      const serve = startServe(['--data-dir', join(dir, 'data')], tmpfsFor(dir));
      running.push(serve);
      await serve.ready;
      const baseUrl = serve.banner(/running at (http:\/\/127\.0\.0\.1:\d+\/api)/);
      const key = serve.banner(/export BRANCH_API_KEY=(wsk_[0-9A-Za-z]+)/);
      const endpoint = serve.banner(/DynamoDB: {2}(http:\/\/\S+)/);
      const consoleUrl = serve.banner(/Settings console: (\S+)/);
      // The tmpfs as the stack sees it, from outside its mount namespace.
      const mounted = `/proc/${serve.child.pid}/root${dir}`;
      const launch = await fetch(consoleUrl, { redirect: 'manual' });
      const cookie = launch.headers.get('set-cookie')!.split(';')[0]!;
      const consolePage = async () => {
        const page = await fetch(new URL('/branches/br_demo/keys', consoleUrl), { headers: { cookie } });
        return { status: page.status, text: await page.text() };
      };

      // The disk filled but for 256 KB: the calls that follow fill the rest.
      const { bavail, bsize } = await statfs(mounted);
      await writeFile(join(mounted, 'filler'), Buffer.alloc(bavail * bsize - 256 * 1024));
      const answered: { status: number; requestId: string }[] = [];
      const call = async () => {
        const response = await fetch(`${baseUrl}/v1/branch`, { headers: { authorization: `Bearer ${key}` } });
        const body = (await response.json()) as { error?: { code: string } };
        answered.push({ status: response.status, requestId: response.headers.get('x-request-id')! });
        return { status: response.status, code: body.error?.code, retryAfter: response.headers.get('retry-after') };
      };
      let refused;
      for (let round = 0; round < 2000 && !refused; round += 1) {
        const responses = await Promise.all(Array.from({ length: 8 }, call));
        refused = responses.find(({ status }) => status !== 200);
      }
      expect(refused).toEqual({ status: 503, code: 'service_unavailable', retryAfter: '1' });
      expect((await call()).status).toBe(503);
      const said = await consolePage();
      expect(said.status).toBe(503);
      expect(said.text).toContain('No space left on device');
      expect(serve.child.exitCode).toBeNull();

      // Space again: the store opens again by itself (once a second).
      await rm(join(mounted, 'filler'));
      let back;
      for (let attempt = 0; attempt < 600 && back !== 200; attempt += 1) {
        back = (await call()).status;
        if (back !== 200) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(back).toBe(200);
      expect((await consolePage()).status).toBe(200);
      expect(serve.output().stderr).toContain('The embedded DynamoDB serves again');

      // Every answered call is stored (and counted), or in the log to replay, or one whose key
      // could not be read: the log says so by request id.
      const ctx = createOperatorContext({ ...process.env, ...localTables, DYNAMODB_ENDPOINT: endpoint });
      try {
        const since = hourOf(Date.now() - 3_600_000);
        const stored = new Set<string>();
        let position: string | undefined;
        do {
          const page = await ctx.usage.query({ branchId: 'br_demo', since: new Date(since), limit: 1000, position });
          for (const record of page.records) stored.add(record.request_id);
          position = page.nextPosition;
        } while (position);
        const logged = async () =>
          (await readFile(join(mounted, 'data', 'branch-api.log'), 'utf8'))
            .split('\n')
            .filter((line) => line.startsWith('{'))
            .map((line) => JSON.parse(line) as LogLine);
        const ids = (lines: LogLine[], message: string) =>
          new Set(lines.filter((l) => l.message === message).map((l) => l.usage_record?.request_id ?? l.request_id));
        const unaccountedFor = async () => {
          const lines = await logged();
          const toReplay = ids(lines, 'Usage record not stored');
          const keyUnknown = ids(lines, 'Call without a known key');
          return answered.filter(
            ({ status, requestId }) =>
              !stored.has(requestId) && !toReplay.has(requestId) && !(status === 503 && keyUnknown.has(requestId)),
          );
        };
        // The lines the full disk held back are written once it takes them again.
        let unaccounted = await unaccountedFor();
        for (let read = 0; read < 100 && unaccounted.length > 0; read += 1) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          unaccounted = await unaccountedFor();
        }
        expect(unaccounted).toEqual([]);
        expect(answered.filter(({ status }) => status === 200).length).toBeGreaterThan(0);
        let counted = 0;
        for (let read = 0; read < 600 && counted < stored.size; read += 1) {
          counted = (await summarizeUsage(ctx, { branchId: 'br_demo', since })).totals.calls;
          if (counted < stored.size) await new Promise((resolve) => setTimeout(resolve, 100));
        }
        expect(counted).toBe(stored.size);
      } finally {
        ctx.close();
      }
      serve.child.kill('SIGINT');
      expect((await serve.exited)[0]).toBe(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 180_000);
});

describe('a second stack on the same data directory', () => {
  it('exits 1 with one line that says so, and the first keeps serving', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'branch-api-twice-'));
    try {
      const first = startServe(['--data-dir', dataDir]);
      running.push(first);
      await first.ready;
      const second = startServe(['--data-dir', dataDir]);
      running.push(second);
      const [code] = await second.exited;
      const lines = second
        .output()
        .stderr.trim()
        .split('\n')
        .filter((line) => !line.includes('nodedir'));
      expect({ code, lines }).toEqual({
        code: 1,
        lines: [
          `error: The data directory ${dataDir} is in use by another branch-api serve; stop it or use another --data-dir`,
        ],
      });
      const baseUrl = first.banner(/running at (http:\/\/127\.0\.0\.1:\d+\/api)/);
      const key = first.banner(/export BRANCH_API_KEY=(wsk_[0-9A-Za-z]+)/);
      expect((await fetch(`${baseUrl}/v1/branch`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(200);
      first.child.kill('SIGINT');
      expect((await first.exited)[0]).toBe(0);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});
