/**
 * SIGKILL of the local stack at random points of a `usage replay` of an hour hours back (docs/
 * decisions.md "Local store and change feed"): the next start recounts the hours of every call it
 * had not applied, whatever hour they belong to, and says so; the hour is exact then, and after
 * the documented resume (the replay run again) it counts each raw record once. The stack (store,
 * feed, aggregator) is a child process on a data directory; the replay runs here, through a proxy
 * that lets a random number of its requests through and holds the rest until the kill.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { replayUsageLog } from '../../lib/operator/usage-replay';
import { hourOf } from '../../shared/domain/rollups';
import { startFaultProxy } from '../support/fault-proxy';
import { mainBranch } from '../support/fixtures';
import {
  callsIn,
  childPool,
  countsOf,
  exactOrNamed,
  HOUR_MS,
  logOf,
  randomOf,
  withContext,
} from '../support/usage-kill';

const SEEDS = Array.from({ length: 20 }, (_, i) => i + 1);
const pool = childPool();
let dataDir: string;
let stack: Awaited<ReturnType<typeof pool.stack>>;
let keyId: string;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'usage-kill-replay-'));
  stack = await pool.stack(dataDir);
  keyId = await withContext(stack.endpoint, async (ctx) => {
    await ctx.branchData.putBranch(mainBranch);
    return (await ctx.keys.create({ branchId: mainBranch.id, scopes: ['read'] })).record.key_id;
  });
});
afterAll(async () => {
  await stack.kill();
  await pool.close();
  await rm(dataDir, { recursive: true, force: true });
});

it.each(SEEDS)(
  'seed %i: the hour of a replay killed midway is exact after the restart and the resume',
  async (seed) => {
    const random = randomOf(seed);
    const hour = hourOf(Date.now() - (2 + seed) * HOUR_MS);
    const calls = callsIn(hour, 100 + Math.floor(random() * 200), `replay-${seed}`, { branchId: mainBranch.id, keyId });
    const file = await logOf(calls);
    const proxy = await startFaultProxy(stack.endpoint);
    // A replay of 100-300 records makes 5-13 requests: kill before, during or after them, and
    // while the feed (a 200 ms window) has delivered none, some or all of them.
    const passing = Math.floor(random() * 14);
    proxy.inject('*', { kind: 'stall' }, Number.POSITIVE_INFINITY, passing);
    const replay = withContext(proxy.endpoint, (ctx) => replayUsageLog(ctx, file)).catch(() => undefined);
    await Promise.race([proxy.until((seen) => seen.length > passing), replay]);
    await new Promise((resolve) => setTimeout(resolve, random() * 400));
    await stack.kill();
    await proxy.close();

    stack = await pool.stack(dataDir);
    const restarted = await withContext(stack.endpoint, (ctx) => countsOf(ctx, mainBranch.id, hour));
    expect(exactOrNamed(restarted)).toBe('exact or named');
    // Whatever was stored of that hour, six hours back or sixty, the start said it recounted it.
    if (restarted.raw > 0) {
      expect(stack.recovery?.recounted).toContainEqual({
        branchId: mainBranch.id,
        since: expect.stringMatching(/Z$/),
        until: expect.stringMatching(/Z$/),
      });
      const covering = stack.recovery!.recounted.filter((p) => p.since <= hour && hour < p.until);
      expect(covering).toHaveLength(1);
    }

    // The documented resume: run the replay again.
    await withContext(stack.endpoint, (ctx) => replayUsageLog(ctx, file));
    await stack.drain();
    const resumed = await withContext(stack.endpoint, (ctx) => countsOf(ctx, mainBranch.id, hour));
    expect(resumed).toEqual({ raw: calls.length, rolled: calls.length, unverified: false });
  },
);
