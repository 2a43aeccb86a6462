/**
 * The kill tests' tools (test/local/usage-kill-*.test.ts): child processes to kill, a seeded random
 * source, logs of records to replay, and the check every kill test makes of an hour: its raw
 * records, what the rollups count, and whether the summary names it unverified.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { build } from 'esbuild';
import type { Recovery } from '../../lib/local/usage-change-feed';
import { createOperatorContext, type OperatorContext } from '../../lib/operator/context';
import { summarizeUsage } from '../../lib/operator/usage-rollups';
import { PROJECT_ROOT } from '../../lib/project-paths';
import { startFaultProxy } from './fault-proxy';
import { mainBranch } from './fixtures';
import type { UsageRecord } from '../../shared/domain/usage-record';

export const HOUR_MS = 3_600_000;
// One per jest worker: files running side by side never write the same bundle.
const BUNDLE_DIR = join(PROJECT_ROOT, 'node_modules', '.cache', 'usage-kill', String(process.pid));

/** A seeded random source in [0, 1) (mulberry32): a failing seed replays the same choices. */
export const randomOf = (seed: number) => {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
};

interface Child {
  send(line: string): void;
  next(): Promise<string>;
  kill(): Promise<void>;
}

type Role = 'stack' | 'rebuild';

const spawnChild = async (role: Role): Promise<Child> => {
  const child = spawn(process.execPath, [join(BUNDLE_DIR, 'usage-kill-child.mjs'), role], {
    cwd: PROJECT_ROOT,
    env: { ...process.env, DYNAMODB_ENDPOINT: '' },
    // Its stdout is the aggregator's log; it speaks on a pipe of its own.
    stdio: ['pipe', 'ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk) => (stderr += String(chunk)));
  // A line sent to a child that was just killed goes nowhere.
  child.stdin!.on('error', () => undefined);
  const exited = once(child, 'exit');
  const lines = createInterface({ input: child.stdio[3] as Readable })[Symbol.asyncIterator]();
  const next = async () => {
    const { value, done } = await lines.next();
    if (done) throw new Error(`The child ended: ${stderr.slice(-2000)}`);
    return value as string;
  };
  const ready = await next();
  if (ready !== 'ready') throw new Error(`The child said ${ready}`);
  return {
    send: (line) => void child.stdin!.write(`${line}\n`),
    next,
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
};

/** A rebuild of one hour of `mainBranch` in a child, through `endpoint`; `onWait` runs where it waits for the longest lag. */
const rebuildIn = (child: Child, endpoint: string, hour: string, onWait: () => Promise<void>) => {
  child.send(`rebuild ${endpoint} ${mainBranch.id} ${hour}`);
  const done = (async () => {
    for (let line = await child.next(); ; line = await child.next()) {
      if (line !== 'wait') return line;
      await onWait();
      child.send('go');
    }
  })();
  done.catch(() => undefined);
  return done;
};

/**
 * Child processes (usage-kill-child.ts), bundled once (split as the CLI's build is, so a child
 * loads only what its role runs), each started one ahead of its use so a test waits for no module
 * loading; `close()` kills them all.
 */
export const childPool = () => {
  let bundled: Promise<unknown> | undefined;
  const started: Promise<Child>[] = [];
  const spares = new Map<Role, Promise<Child>>();
  const spawnOne = (role: Role) => {
    bundled ??= build({
      entryPoints: [join(PROJECT_ROOT, 'test', 'support', 'usage-kill-child.ts')],
      outdir: BUNDLE_DIR,
      outExtension: { '.js': '.mjs' },
      bundle: true,
      splitting: true,
      platform: 'node',
      format: 'esm',
      packages: 'external',
      // The bundle runs as if from lib/, so lib/project-paths.ts finds the checkout (and the store's worker file).
      define: { 'import.meta.dirname': JSON.stringify(join(PROJECT_ROOT, 'lib')) },
      logLevel: 'warning',
    });
    const child = bundled.then(() => spawnChild(role));
    started.push(child);
    child.catch(() => undefined);
    spares.set(role, child);
    return child;
  };
  const take = (role: Role) => {
    const child = spares.get(role) ?? spawnOne(role);
    spawnOne(role);
    return child;
  };
  return {
    /**
     * The store and feed of the local stack on `dataDir`, batching deliveries `windowMs`
     * (usage-kill-child.ts `stack`); a rebuild may run in it, to be killed with it.
     */
    stack: async (dataDir: string, windowMs: number) => {
      const child = await take('stack');
      child.send(`${dataDir} ${windowMs}`);
      const { endpoint, recovery } = JSON.parse(await child.next()) as { endpoint: string; recovery: Recovery | null };
      const drain = async () => {
        child.send('drain');
        if ((await child.next()) !== 'drained') throw new Error('The stack did not drain');
      };
      const rebuild = (through: string, hour: string, onWait: () => Promise<void>) =>
        rebuildIn(child, through, hour, onWait);
      return { endpoint, recovery, drain, rebuild, kill: child.kill };
    },
    /** A rebuild in a child of its own. */
    rebuild: async (endpoint: string, hour: string, onWait: () => Promise<void>) => {
      const child = await take('rebuild');
      return { done: rebuildIn(child, endpoint, hour, onWait), kill: child.kill };
    },
    close: async () => {
      await Promise.all(
        started.map((child) =>
          child.then(
            (c) => c.kill(),
            () => undefined,
          ),
        ),
      );
      await rm(BUNDLE_DIR, { recursive: true, force: true });
    },
  };
};

/**
 * The local stack (a child) on a data directory of its own, with a key of `mainBranch`;
 * `restart()` starts it again after a kill, with another batching window if given.
 */
export const stackWithKey = async (pool: ReturnType<typeof childPool>, windowMs: number) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'usage-kill-stack-'));
  let stack = await pool.stack(dataDir, windowMs);
  const keyId = await withContext(stack.endpoint, async (ctx) => {
    await ctx.branchData.putBranch(mainBranch);
    return (await ctx.keys.create({ branchId: mainBranch.id, scopes: ['read'] })).record.key_id;
  });
  return {
    key: { branchId: mainBranch.id, keyId },
    now: () => stack,
    restart: async (window = windowMs) => (stack = await pool.stack(dataDir, window)),
    close: async () => {
      await stack.kill();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
};

/**
 * A rebuild of `hour` of `mainBranch` through a proxy to the stack, killed at a random point: one
 * of its requests (the next is held), or where it waits for the longest lag, once the stack has
 * applied what it held (some of it recounted). It runs in a child of its own, or `inStack`: then
 * the stack is killed with it, and so is `alsoKill`.
 */
export const killRebuild = async (
  pool: ReturnType<typeof childPool>,
  { stack, hour, random, inStack = false, alsoKill }: RebuildKill,
) => {
  const proxy = await startFaultProxy(stack.endpoint);
  // A rebuild of one hour makes 20-45 requests.
  const killAt = random() < 0.3 ? 'wait' : Math.floor(random() * 45);
  if (killAt !== 'wait') proxy.inject('*', { kind: 'stall' }, Number.POSITIVE_INFINITY, killAt);
  const onWait = async () => {
    await stack.drain();
    if (killAt === 'wait') await rebuild.kill();
  };
  const rebuild: { done: Promise<unknown>; kill: () => Promise<unknown> } = inStack
    ? { done: stack.rebuild(proxy.endpoint, hour, onWait), kill: () => Promise.all([stack.kill(), alsoKill?.()]) }
    : await pool.rebuild(proxy.endpoint, hour, onWait);
  await Promise.race([rebuild.done, proxy.until((seen) => killAt !== 'wait' && seen.length > killAt)]).catch(
    () => undefined,
  );
  await rebuild.kill();
  await proxy.close();
};

interface RebuildKill {
  stack: Awaited<ReturnType<ReturnType<typeof childPool>['stack']>>;
  hour: string;
  random: () => number;
  inStack?: boolean;
  alsoKill?: () => Promise<unknown>;
}

/** An operator context on an endpoint, closed after `work`. */
export const withContext = async <T>(endpoint: string, work: (ctx: OperatorContext) => Promise<T>): Promise<T> => {
  const ctx = createOperatorContext({ ...process.env, DYNAMODB_ENDPOINT: endpoint });
  try {
    return await work(ctx);
  } finally {
    ctx.close();
  }
};

/** `count` calls of a key spread over one hour, with request ids that start with `tag`. */
export const callsIn = (hour: string, count: number, tag: string, key: { branchId: string; keyId: string }) =>
  Array.from({ length: count }, (_, i): UsageRecord => ({
    branch_id: key.branchId,
    key_id: key.keyId,
    method: 'GET',
    path: '/api/v1/branch',
    route: 'GET /v1/branch',
    status: i % 7 === 0 ? 500 : 200,
    response_time_ms: (i % 50) + 0.25,
    timestamp: new Date(Date.parse(hour) + Math.floor((i * HOUR_MS) / count)).toISOString(),
    request_id: `${tag}-${i}`,
  }));

/** A log file of these records, as `usage replay` reads one ("Usage record not stored" lines). */
export const logOf = async (records: readonly UsageRecord[]) => {
  const file = join(await mkdtemp(join(tmpdir(), 'usage-kill-')), 'failed-usage.log');
  const line = (record: UsageRecord) =>
    JSON.stringify({ level: 'ERROR', message: 'Usage record not stored', usage_record: record });
  await writeFile(file, records.map(line).join('\n'));
  return file;
};

/** An hour of a branch: its raw records, the calls the rollups count, and whether the summary names it unverified. */
export const countsOf = async (ctx: OperatorContext, branchId: string, hour: string) => {
  const [since, until] = [new Date(hour), new Date(Date.parse(hour) + HOUR_MS)];
  let raw = 0;
  let position: string | undefined;
  do {
    const page = await ctx.usage.query({ branchId, since, until, limit: 1000, ...(position ? { position } : {}) });
    raw += page.records.length;
    position = page.nextPosition;
  } while (position);
  const summary = await summarizeUsage(ctx, { branchId, since: hour, until: until.toISOString(), by: 'hour' });
  return { raw, rolled: summary.totals.calls, unverified: summary.unverified?.hours.includes(hour) ?? false };
};

/** Exact, or named unverified by the summary: never silently short or over. */
export const exactOrNamed = ({ raw, rolled, unverified }: Awaited<ReturnType<typeof countsOf>>) =>
  raw === rolled || unverified ? 'exact or named' : `raw ${raw}, rolled ${rolled}, not named`;
