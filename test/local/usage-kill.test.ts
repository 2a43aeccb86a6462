/**
 * Counts that survive every crash (docs/decisions.md "Local store and change feed",
 * docs/usage-rollups.md "Rebuild"): SIGKILL at random points of a `usage replay` of an hour hours
 * back, of a `usage rebuild` while a replay of its hour is applied, and of both together, 20 seeds
 * each. After the kill (and the restart) every hour is exact or named unverified by `usage
 * summary` — never silently short or over; after the documented resume it is exact. The stack
 * (store, change feed, aggregator) and the rebuild are child processes (test/support/usage-kill.ts);
 * the replay runs here. A kill is placed by counting requests through a proxy that lets a random
 * number through and holds the next, or where the rebuild waits for the longest lag.
 */
import { rebuildRollups } from '../../lib/operator/usage-rebuild';
import { replayUsageLog } from '../../lib/operator/usage-replay';
import { hourOf } from '../../shared/domain/rollups';
import { startFaultProxy } from '../support/fault-proxy';
import {
  callsIn,
  childPool,
  countsOf,
  exactOrNamed,
  HOUR_MS,
  killRebuild,
  logOf,
  randomOf,
  stackWithKey,
  withContext,
} from '../support/usage-kill';

const seeds = (offset: number) => Array.from({ length: 20 }, (_, i) => offset + i + 1);
/** A batching window that delivers while a kill is on its way; one that delivers only when drained. */
const [DELIVERING_MS, HOLDING_MS] = [200, 600_000];
const pool = childPool();
let local: Awaited<ReturnType<typeof stackWithKey>>;

beforeAll(async () => {
  local = await stackWithKey(pool, DELIVERING_MS);
});
afterAll(async () => {
  await local.close();
  await pool.close();
});

/** Calls in the seed's own hour (2 + seed hours back), in a log file; a share of them replayed and applied first. */
const seedHour = async (seed: number, random: () => number, countedShare = 0) => {
  const hour = hourOf(Date.now() - (2 + seed) * HOUR_MS);
  const calls = callsIn(hour, 10 + Math.floor(random() * 60), `seed-${seed}`, local.key);
  const file = await logOf(calls);
  const counted = Math.floor(countedShare * calls.length);
  const stack = local.now();
  await withContext(stack.endpoint, (ctx) => replayUsageLog(ctx, file, { fromLine: calls.length - counted + 1 }));
  await stack.drain();
  return {
    hour,
    calls,
    file,
    counts: () => withContext(local.now().endpoint, (ctx) => countsOf(ctx, local.key.branchId, hour)),
  };
};

/** The documented resume of a rebuild: run it again (its wait for the lag: the feed drained). */
const rebuildAgain = (hour: string) =>
  withContext(local.now().endpoint, (ctx) =>
    rebuildRollups(ctx, {
      branchId: local.key.branchId,
      since: hour,
      until: new Date(Date.parse(hour) + HOUR_MS).toISOString(),
      wait: local.now().drain,
    }),
  );

describe('the stack killed during a replay', () => {
  it.each(seeds(0))(
    'seed %i: the next start recounts the hour and says so; the resume leaves it exact',
    async (seed) => {
      const random = randomOf(seed);
      const { hour, calls, file, counts } = await seedHour(seed, random);
      const proxy = await startFaultProxy(local.now().endpoint);
      // A replay of 10-70 records makes 3-5 requests: kill before, during or after them, once the
      // feed has applied a random count of what was stored (none, some or all; counted, not timed).
      const passing = Math.floor(random() * 6);
      proxy.inject('*', { kind: 'stall' }, Number.POSITIVE_INFINITY, passing);
      const replay = withContext(proxy.endpoint, (ctx) => replayUsageLog(ctx, file)).catch(() => undefined);
      await Promise.race([proxy.until((seen) => seen.length > passing), replay]);
      const applied = Math.floor(random() * ((await counts()).raw + 1));
      while ((await counts()).rolled < applied) await new Promise((resolve) => setTimeout(resolve, 20));
      await local.now().kill();
      await proxy.close();

      const { recovery } = await local.restart(DELIVERING_MS);
      const restarted = await counts();
      // Whatever was stored of that hour, six hours back or sixty, the start said it recounted it.
      const said = (recovery?.recounted ?? []).some(({ since, until }) => since <= hour && hour < until);
      expect({ check: exactOrNamed(restarted), said: restarted.raw === 0 || said }).toEqual({
        check: 'exact or named',
        said: true,
      });

      // The documented resume: run the replay again.
      await withContext(local.now().endpoint, (ctx) => replayUsageLog(ctx, file));
      await local.now().drain();
      expect(await counts()).toEqual({ raw: calls.length, rolled: calls.length, unverified: false });
    },
  );
});

describe('a rebuild killed while a replay of its hour is applied', () => {
  // Deliveries wait for a drain (under 100 records a shard): what the rebuild recounts is applied
  // after its rewrite, as when the stream lags.
  beforeAll(() =>
    local
      .now()
      .kill()
      .then(() => local.restart(HOLDING_MS)),
  );

  it.each(seeds(20))('seed %i: the hour is exact or named, and exact after the resume', async (seed) => {
    const random = randomOf(seed);
    const { hour, calls, file, counts } = await seedHour(seed, random, random());
    // The rest replayed before the rebuild starts, or while it runs.
    const replay = withContext(local.now().endpoint, (ctx) => replayUsageLog(ctx, file));
    if (random() < 0.5) await replay;
    await killRebuild(pool, { stack: local.now(), hour, random });
    await replay;
    await local.now().drain();
    expect(exactOrNamed(await counts())).toBe('exact or named');

    await rebuildAgain(hour);
    expect(await counts()).toEqual({ raw: calls.length, rolled: calls.length, unverified: false });
  });
});

describe('the stack and a rebuild killed together during a replay', () => {
  it.each(seeds(40))('seed %i: the hour is exact or named after the restart, exact after the resume', async (seed) => {
    const random = randomOf(seed);
    const { hour, calls, file, counts } = await seedHour(seed, random, random());
    // The rest replayed before the rebuild starts, or while it runs (cut short by the kill).
    const replayProxy = await startFaultProxy(local.now().endpoint);
    const replay = withContext(replayProxy.endpoint, (ctx) => replayUsageLog(ctx, file)).catch(() => undefined);
    if (random() < 0.5) await replay;
    await killRebuild(pool, { stack: local.now(), hour, random, inStack: true, alsoKill: replayProxy.close });

    await local.restart(HOLDING_MS);
    expect(exactOrNamed(await counts())).toBe('exact or named');

    // The documented resume: the replay and the rebuild run again.
    await withContext(local.now().endpoint, (ctx) => replayUsageLog(ctx, file));
    await local.now().drain();
    await rebuildAgain(hour);
    expect(await counts()).toEqual({ raw: calls.length, rolled: calls.length, unverified: false });
  });
});
