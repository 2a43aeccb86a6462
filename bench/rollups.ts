/**
 * Usage at scale (docs/usage-rollups.md), on a fresh embedded DynamoDB of its own:
 * - 100,000 synthetic calls over 30 days (10 keys, one branch) stored as raw records;
 * - aggregator throughput: the same calls as stream batches of 100 through the aggregator's
 *   logic (shared/lambda/usage-stream.ts), one batch at a time (one shard), records/s;
 * - `usage summary` over the 30 days from the rollups (items read, wall time) against reading
 *   the raw records for the same answer;
 * - local change feed lag at the local stack's peak rate: calls written through the feed's endpoint
 *   at BENCH_FEED_RATE/s (300, what the local stack serves on 2 cores) while it delivers them to
 *   the aggregator function, write answered → batch aggregated, p50/p99/max;
 * - one hour of 100,000 calls of one key (BENCH_FLOOD_CALLS): aggregated as stream batches of
 *   100 (exact, and the item's size), then `usage rebuild` of that hour (seconds);
 * - `usage replay` of a log of 10,000 failed records (BENCH_REPLAY_RECORDS): records/s;
 * - the largest rollup item in bytes (DynamoDB's limit: 400 KB).
 * Prints one JSON line. BENCH_ROLLUP_CALLS, BENCH_FEED_CALLS, BENCH_FLOOD_CALLS and
 * BENCH_REPLAY_RECORDS scale it down for a quick run.
 */
import type { Metrics } from '@aws-lambda-powertools/metrics';
import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import { readDynamoDbSettings } from '../shared/lambda/config';
import { createDocumentClient } from '../shared/data/dynamodb';
import { RollupsRepository } from '../shared/data/repositories/rollups';
import { UsageRepository, usageItemOf } from '../shared/data/repositories/usage';
import type { UsageRecord } from '../shared/domain/usage-record';
import { hourOf, totalsOf } from '../shared/domain/rollups';
import { createUsageAggregator } from '../shared/lambda/usage-stream';
import { startUsageChangeFeed } from '../lib/local/usage-change-feed';
import { startEmbeddedDynamo } from '../lib/local/dynamo';
import { streamEvent, usageChange } from '../lib/local/stream-events';
import { benchFlood, benchReplay, largestItem } from './lib/rollups-parts';
import { ensureTables } from '../lib/operator/tables';
import { percentile, round } from './lib/stats';

const CALLS = Number(process.env.BENCH_ROLLUP_CALLS ?? 100_000);
const FEED_CALLS = Number(process.env.BENCH_FEED_CALLS ?? 3_000);
const FEED_RATE = Number(process.env.BENCH_FEED_RATE ?? 300);
const FLOOD_CALLS = Number(process.env.BENCH_FLOOD_CALLS ?? 100_000);
const REPLAY_RECORDS = Number(process.env.BENCH_REPLAY_RECORDS ?? 10_000);
const KEYS = 10;
const DAYS = 30;
const BRANCH = 'br_bench';
const END = Date.UTC(2027, 0, 31);
const START = END - DAYS * 86_400_000;
const ROUTES = ['GET /v1/branch', 'GET /v1/members', 'GET /v1/payment-providers', 'GET /v1/payment-providers/{id}'];
const tables = {
  usage: 'bench-usage',
  rollups: 'bench-rollups',
  keys: 'bench-keys',
  branchData: 'bench-branch-data',
  rateLimits: 'bench-rate-limits',
  activity: 'bench-activity',
};

const log = (line: string) => process.stderr.write(`[rollups] ${line}\n`);

/** Calls spread evenly over the 30 days, in time order (as a stream delivers them). */
const call = (i: number, total: number, start = START, end = END): UsageRecord => ({
  branch_id: BRANCH,
  key_id: `key_${i % KEYS}`,
  method: 'GET',
  path: '/api/v1/branch',
  route: ROUTES[i % ROUTES.length]!,
  status: i % 50 === 0 ? 503 : i % 10 === 0 ? 404 : 200,
  response_time_ms: 2 + ((i * 7919) % 120),
  timestamp: new Date(start + Math.floor(((end - start) * i) / total)).toISOString(),
  request_id: `bench-${start}-${i}`,
});

const dynamo = await startEmbeddedDynamo({ port: 0 });
// The bench's own clients share this process with the embedded DynamoDB, the feed and the
// aggregator: generous timeouts, so a busy machine slows the figures rather than failing the run.
const settings = {
  ...readDynamoDbSettings({ DYNAMODB_ENDPOINT: dynamo.endpoint }),
  deadlineMs: 30_000,
  connectTimeoutMs: 5000,
  requestTimeoutMs: 10_000,
};
const client = createDocumentClient(settings);
await ensureTables(client, tables);
const usage = new UsageRepository(client, tables.usage);
const rollups = new RollupsRepository(client, tables.rollups);

log(`storing ${CALLS} raw records`);
const records = Array.from({ length: CALLS }, (_, i) => call(i, CALLS));
const writers = 4;
let next = 0;
await Promise.all(
  Array.from({ length: writers }, async () => {
    while (next < records.length) {
      const batch = records.slice(next, next + 25);
      next += 25;
      await client.send(
        new BatchWriteCommand({
          RequestItems: {
            [tables.usage]: batch.map((r) => ({
              PutRequest: { Item: usageItemOf(r, 400) },
            })),
          },
        }),
      );
    }
  }),
);

log('aggregating them as stream batches of 100');
const aggregate = createUsageAggregator({
  rollups,
  retentionDays: 400,
  // Quiet, and no metrics to flush: this measures the aggregation.
  logger: { info: () => undefined, warn: () => undefined, error: () => undefined },
  metrics: { addMetric: () => undefined } as unknown as Pick<Metrics, 'addMetric'>,
});
const aggregateStarted = performance.now();
for (let i = 0; i < records.length; i += 100) {
  const changes = records.slice(i, i + 100).map((r, j) => usageChange(r, i + j + 1));
  const { batchItemFailures } = await aggregate(streamEvent(changes, 'arn'));
  if (batchItemFailures.length > 0) throw new Error('aggregation failed');
}
const aggregateSeconds = (performance.now() - aggregateStarted) / 1000;

log('summary from the rollups vs from the raw records');
const summaryStarted = performance.now();
const hours = await rollups.hours({ branchId: BRANCH, fromHour: hourOf(START), toHour: hourOf(END - 1) });
const fromRollups = totalsOf(hours);
const summaryMs = performance.now() - summaryStarted;

const rawStarted = performance.now();
const raw: UsageRecord[] = [];
let position: string | undefined;
do {
  const page = await usage.query({
    branchId: BRANCH,
    since: new Date(START),
    limit: 1000,
    ...(position ? { position } : {}),
  });
  raw.push(...page.records);
  position = page.nextPosition;
} while (position);
const rawErrors = raw.filter((r) => r.status >= 500).length;
const rawMs = performance.now() - rawStarted;
if (fromRollups.calls !== CALLS || raw.length !== CALLS || fromRollups.by_status_class['5xx'] !== rawErrors) {
  throw new Error(`summary mismatch: rollups ${fromRollups.calls}, raw ${raw.length}`);
}

log(`local change feed lag over ${FEED_CALLS} calls`);
const feed = await startUsageChangeFeed({
  target: dynamo.endpoint,
  usageTable: tables.usage,
  rollupsTable: tables.rollups,
});
process.env.DYNAMODB_ENDPOINT = feed.endpoint;
process.env.ROLLUPS_TABLE = tables.rollups;
process.env.AWS_REGION ??= 'local';
process.env.POWERTOOLS_METRICS_DISABLED = 'true';
process.env.POWERTOOLS_LOG_LEVEL = 'ERROR';
const viaFeed = new UsageRepository(createDocumentClient({ ...settings, endpoint: feed.endpoint }), tables.usage);
const now = Date.now();
const feedStarted = performance.now();
const inFlight = new Set<Promise<void>>();
// Open loop at the rate (call i starts at i / rate seconds), at most 32 writes in flight: when the
// machine can't keep up, the rate achieved is reported rather than a pile of connections.
for (let i = 0; i < FEED_CALLS; i += 1) {
  const wait = feedStarted + (i * 1000) / FEED_RATE - performance.now();
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  while (inFlight.size >= 32) await Promise.race(inFlight);
  const write: Promise<void> = viaFeed.put(call(i, FEED_CALLS, now - 3_600_000, now), 1).finally(() => {
    inFlight.delete(write);
  });
  inFlight.add(write);
}
await Promise.all(inFlight);
const feedRate = FEED_CALLS / ((performance.now() - feedStarted) / 1000);
await feed.drain();
const { lagsMs, delivered } = feed.stats();
await feed.close();
if (delivered !== FEED_CALLS) throw new Error(`the feed delivered ${delivered} of ${FEED_CALLS}`);

const flood = await benchFlood({ client, aggregate, endpoint: dynamo.endpoint, tables, calls: FLOOD_CALLS });
const replay = await benchReplay({ endpoint: dynamo.endpoint, tables, records: REPLAY_RECORDS });
const largestItemBytes = await largestItem(client, tables.rollups);
client.destroy();
await dynamo.close();

const result = {
  calls: CALLS,
  keys: KEYS,
  days: DAYS,
  hourKeyBound: DAYS * 24 * KEYS,
  aggregator: { seconds: round(aggregateSeconds, 2), recordsPerSecond: Math.round(CALLS / aggregateSeconds) },
  summary: { itemsRead: hours.length, ms: round(summaryMs, 1) },
  raw: { itemsRead: raw.length, ms: round(rawMs, 1) },
  feed: {
    calls: FEED_CALLS,
    ratePerSecond: Math.round(feedRate),
    delivered,
    lagP50Ms: round(percentile(lagsMs, 50), 1),
    lagP99Ms: round(percentile(lagsMs, 99), 1),
    lagMaxMs: round(Math.max(...lagsMs), 1),
  },
  flood: { calls: FLOOD_CALLS, ...flood },
  replay,
  largestItemBytes,
};
process.stdout.write(`${JSON.stringify(result)}\n`);
