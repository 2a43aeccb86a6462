/**
 * SIGKILL of `usage rebuild` at random points while a replay of the same hour is being applied
 * (docs/usage-rollups.md "Rebuild"): the hour is exact, or `usage summary` names it unverified
 * with the rebuild that repairs it — never silently over (a recount of calls the feed applies
 * after the rewrite) or short. After the documented resume (the rebuild run again) it is exact.
 * The feed and the aggregator run here over this file's embedded DynamoDB; the rebuild is a
 * child process talking to the feed through a proxy that lets a random number of its requests
 * through and holds the next, or it is killed where it waits for the longest lag.
 */
import { startUsageChangeFeed, type UsageChangeFeed } from '../../lib/local/usage-change-feed';
import { createOperatorContext, type OperatorContext } from '../../lib/operator/context';
import { ensureTables } from '../../lib/operator/tables';
import { rebuildRollups } from '../../lib/operator/usage-rebuild';
import { replayUsageLog } from '../../lib/operator/usage-replay';
import { hourOf } from '../../shared/domain/rollups';
import { startFaultProxy } from '../support/fault-proxy';
import { mainBranch } from '../support/fixtures';
import { createKey, createTables, fixtureClient, seedBranches, tableNames } from '../support/harness';
import { callsIn, childPool, countsOf, exactOrNamed, HOUR_MS, logOf, randomOf } from '../support/usage-kill';

const SEEDS = Array.from({ length: 20 }, (_, i) => i + 1);
const pool = childPool();
let feed: UsageChangeFeed;
let ctx: OperatorContext;
let keyId: string;

beforeAll(async () => {
  await createTables();
  await ensureTables(fixtureClient, { rollups: tableNames.rollups });
  await seedBranches();
  keyId = (await createKey()).record.key_id;
  // Nothing is delivered until the test drains the feed (under 100 records a shard): the calls a
  // rebuild recounts are applied after its rewrite, as a replay's are when the stream lags.
  feed = await startUsageChangeFeed({
    target: process.env.DYNAMODB_ENDPOINT!,
    usageTable: tableNames.usage,
    batchWindowMs: 600_000,
  });
  ctx = createOperatorContext({ ...process.env, DYNAMODB_ENDPOINT: feed.endpoint });
});
afterAll(async () => {
  ctx.close();
  await feed.close();
  await pool.close();
});

it.each(SEEDS)(
  'seed %i: an hour a killed rebuild rewrote is exact or named, and exact after the resume',
  async (seed) => {
    const random = randomOf(seed);
    const hour = hourOf(Date.now() - (2 + seed) * HOUR_MS);
    const calls = callsIn(hour, 50 + Math.floor(random() * 150), `rebuild-${seed}`, {
      branchId: mainBranch.id,
      keyId,
    });
    // Part of the hour counted before the rebuild starts.
    const counted = Math.floor(random() * calls.length);
    await replayUsageLog(ctx, await logOf(calls.slice(0, counted)));
    await feed.drain();

    const proxy = await startFaultProxy(feed.endpoint);
    // A rebuild of one hour makes about 60 requests: killed at one of them, or while it waits the lag.
    const killAt = random() < 0.3 ? 'wait' : Math.floor(random() * 70);
    if (killAt !== 'wait') proxy.inject('*', { kind: 'stall' }, Number.POSITIVE_INFINITY, killAt);
    // The rest replayed before the rebuild starts, or while it runs.
    const replay = replayUsageLog(ctx, await logOf(calls.slice(counted)));
    if (random() < 0.5) await replay;
    const rebuild: Awaited<ReturnType<typeof pool.rebuild>> = await pool.rebuild(
      proxy.endpoint,
      mainBranch.id,
      hour,
      async () => {
        // The lag has passed: the feed applied what was replayed, some of it recounted by the rebuild.
        await feed.drain();
        if (killAt === 'wait') await rebuild.kill();
      },
    );
    await Promise.race([rebuild.done, proxy.until((seen) => killAt !== 'wait' && seen.length > killAt)]).catch(
      () => undefined,
    );
    await rebuild.kill();
    await proxy.close();
    await replay;
    await feed.drain();
    expect(exactOrNamed(await countsOf(ctx, mainBranch.id, hour))).toBe('exact or named');

    // The documented resume: run the rebuild again (its wait for the lag: the feed drained).
    const until = new Date(Date.parse(hour) + HOUR_MS).toISOString();
    await rebuildRollups(ctx, { branchId: mainBranch.id, since: hour, until, wait: () => feed.drain() });
    expect(await countsOf(ctx, mainBranch.id, hour)).toEqual({
      raw: calls.length,
      rolled: calls.length,
      unverified: false,
    });
  },
);
