/**
 * One bad record never stops the others (docs/usage-rollups.md "Failures"): the local change
 * feed in front of the embedded DynamoDB delivers the usage table's writes per shard to the
 * aggregator; a record that can't be applied is retried, then set aside in the dead-letter
 * store, while every other branch's calls keep being counted; `usage summary` reports the
 * set-aside calls with the command that repairs them, and that command does.
 */
import { startChangeFeed, type ChangeFeed } from '../../lib/local/change-feed';
import { rollupsSetAside } from '../../lib/local/usage-change-feed';
import { DEFAULT_SHARDS, shardOf } from '../../lib/local/stream-delivery';
import { createOperatorContext, type OperatorContext } from '../../lib/operator/context';
import { ensureTables } from '../../lib/operator/tables';
import { summarizeUsage } from '../../lib/operator/usage-rollups';
import { RollupsRepository } from '../../shared/data/repositories/rollups';
import { usageItemOf } from '../../shared/data/repositories/usage';
import type { UsageRecord } from '../../shared/domain/usage-record';
import { usageTable } from '../../shared/data/tables';
import { hourOf, totalsOf } from '../../shared/domain/rollups';
import { logger, metrics } from '../../shared/lambda/observability';
import { createUsageAggregator } from '../../shared/lambda/usage-stream';
import { runCli } from '../support/cli';
import { faultyClient } from '../support/faulty-client';
import { mainBranch } from '../support/fixtures';
import { createTables, fixtureClient, seedBranches, tableNames } from '../support/harness';

const target = process.env.DYNAMODB_ENDPOINT!;
const POISONED_KEY = 'key_poisoned';
/** The feed shard of a stored call (shards follow the partition key: the branch's write shard). */
const feedShardOf = (record: UsageRecord) => shardOf(JSON.stringify({ S: usageItemOf(record, 1).pk }), DEFAULT_SHARDS);
const healthyBranch = 'br_healthy_0';
const poisonedHour = hourOf(Date.now() - 3 * 3_600_000);

const aCall = (branchId: string, keyId: string, time: number, requestId: string): UsageRecord => ({
  branch_id: branchId,
  key_id: keyId,
  method: 'GET',
  path: '/api/v1/branch',
  route: 'GET /v1/branch',
  status: 200,
  response_time_ms: 5,
  timestamp: new Date(time).toISOString(),
  request_id: requestId,
});

/** The aggregator over a client whose writes to the poisoned key's items fail (an injected fault). */
const poisonedAggregator = createUsageAggregator({
  rollups: new RollupsRepository(
    faultyClient(fixtureClient, (input) => (String(input.Key?.sk).endsWith(POISONED_KEY) ? 'before' : undefined)),
    tableNames.rollups,
  ),
  retentionDays: 400,
  logger,
  metrics,
});

const startFeed = (maxAttempts: number) => {
  const store = rollupsSetAside(target, tableNames.rollups);
  return startChangeFeed({
    target,
    tableName: tableNames.usage,
    keyAttributes: [usageTable.partitionKey.name, usageTable.sortKey!.name],
    handler: poisonedAggregator,
    setAside: store.setAside,
    maxAttempts,
    retryDelayMs: 20,
    batchWindowMs: 20,
  }).then((feed) => ({ ...feed, close: () => feed.close().then(store.close) }));
};

let ctx: OperatorContext;
beforeAll(async () => {
  await createTables();
  await ensureTables(fixtureClient, { rollups: tableNames.rollups });
  await seedBranches();
});
afterAll(() => ctx?.close());

const countOf = async (branchId: string) =>
  totalsOf(await ctx.rollups.hours({ branchId, fromHour: '2000', toHour: '2100' })).calls;

/** Polls the rollups (counting reads, not time) until they show `calls`. */
const waitForCount = async (branchId: string, calls: number) => {
  for (let read = 0; read < 2000; read += 1) {
    if ((await countOf(branchId)) >= calls) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`${branchId}: rollups never showed ${calls} calls`);
};

describe('a record that cannot be applied', () => {
  let feed: ChangeFeed;
  afterEach(() => feed?.close());

  it("holds back only its own shard: another branch's calls are counted while it is retried", async () => {
    feed = await startFeed(1_000_000); // never set aside during this test
    ctx = createOperatorContext({ ...process.env, DYNAMODB_ENDPOINT: feed.endpoint });
    const poisoned = aCall(mainBranch.id, POISONED_KEY, Date.parse(poisonedHour) + 1000, 'poisoned-1');
    await ctx.usage.put(poisoned, 90);
    // Calls of another branch whose write shards go to other feed shards than the poisoned record's.
    const healthy = Array.from({ length: 200 }, (_, i) => aCall(healthyBranch, 'key_h', Date.now(), `healthy-${i}`))
      .filter((call) => feedShardOf(call) !== feedShardOf(poisoned))
      .slice(0, 20);
    for (const call of healthy) await ctx.usage.put(call, 90);
    await waitForCount(healthyBranch, 20);
    // Counted while the poisoned record is still being retried, not after it was set aside.
    expect(feed.stats().setAside).toBe(0);
    expect(await countOf(mainBranch.id)).toBe(0);
    ctx.close();
  });

  it('is set aside after its attempts; the summary says so and names the rebuild that repairs it', async () => {
    feed = await startFeed(3);
    ctx = createOperatorContext({ ...process.env, DYNAMODB_ENDPOINT: feed.endpoint });
    const time = Date.parse(poisonedHour) + 2000;
    await ctx.usage.put(aCall(mainBranch.id, POISONED_KEY, time, 'poisoned-2'), 90);
    await ctx.usage.put(aCall(mainBranch.id, 'key_fine', time, 'fine-1'), 90);
    await feed.drain();
    expect(feed.stats().setAside).toBeGreaterThanOrEqual(1);
    // The calls after it in its own shard were not held back for good.
    expect(await countOf(mainBranch.id)).toBe(1);

    const summary = await summarizeUsage(ctx, { branchId: mainBranch.id, since: poisonedHour });
    const repair = `branch-api usage rebuild --branch ${mainBranch.id} --since ${poisonedHour} --until ${new Date(Date.parse(poisonedHour) + 3_600_000).toISOString()}`;
    expect(summary.set_aside).toMatchObject({ count: 1, complete: true, repair });
    const env = {
      DYNAMODB_ENDPOINT: feed.endpoint,
      AWS_LAMBDA_MAX_CONCURRENCY: undefined,
      ROLLUP_MAX_LAG_SECONDS: '1',
    };
    const text = await runCli(['usage', 'summary', '--branch', mainBranch.id, '--since', poisonedHour], env);
    expect(text.stdout).toContain('1 call(s) from');
    expect(text.stdout).toContain(`Repair: ${repair}`);
    // The raw log says so too.
    const log = await runCli(['usage', '--branch', mainBranch.id, '--json'], env);
    expect(log.json.set_aside).toMatchObject({ count: 1, repair });

    // The repair: the poisoned calls — this one and the first test's, never delivered before its
    // feed stopped — are counted from the raw records (the rebuild writes with Put, which the
    // fault does not touch), and the set-aside one is no longer reported.
    const rebuilt = await runCli([...repair.split(' ').slice(1), '--json'], env);
    expect(rebuilt.code).toBe(0);
    expect(rebuilt.json).toMatchObject({ records: 3, calls_before: 1, calls_after: 3, set_aside_cleared: 1 });
    expect(await countOf(mainBranch.id)).toBe(3);
    expect((await summarizeUsage(ctx, { branchId: mainBranch.id, since: poisonedHour })).set_aside).toBeNull();
    ctx.close();
  });

  it('emits nothing for a put that changes nothing, as DynamoDB Streams does: a retried write counts once', async () => {
    feed = await startFeed(3);
    ctx = createOperatorContext({ ...process.env, DYNAMODB_ENDPOINT: feed.endpoint });
    const once = aCall('br_reput', 'key_r', Date.now(), 'written-twice');
    await ctx.usage.put(once, 90);
    await ctx.usage.put(once, 90); // an SDK retry of a put that had succeeded
    await ctx.usage.putBatch([once, aCall('br_reput', 'key_r', Date.now(), 'written-once')], 90);
    await feed.drain();
    expect(feed.stats().delivered).toBe(2);
    expect(await countOf('br_reput')).toBe(2);
    ctx.close();
  });
});
