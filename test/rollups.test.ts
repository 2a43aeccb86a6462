/**
 * Rollups stay exact under at-least-once delivery: the aggregator (the deployed handler's logic,
 * shared/lambda/usage-stream.ts) against the real embedded DynamoDB, fed stream batches delivered twice,
 * split differently and reordered.
 */
import { marshall } from '@aws-sdk/util-dynamodb';
import fc from 'fast-check';
import { readDynamoDbSettings } from '../shared/lambda/config';
import { createDocumentClient } from '../shared/data/dynamodb';
import { logger, metrics } from '../shared/lambda/observability';
import { RollupsRepository } from '../shared/data/repositories/rollups';
import type { UsageRecord } from '../shared/data/repositories/usage';
import { bucketOf, hourOf, RESPONSE_TIME_BOUNDS_MS, totalsOf, type HourRollup } from '../shared/domain/rollups';
import { createUsageAggregator } from '../shared/lambda/usage-stream';
import { ensureTables } from '../lib/operator/tables';
import { sequenceNumber, streamEvent, type StreamChange } from '../lib/local/stream-events';

const client = createDocumentClient(readDynamoDbSettings(process.env));
const rollupsTable = process.env.ROLLUPS_TABLE!;
const rollups = new RollupsRepository(client, rollupsTable);
const aggregate = createUsageAggregator({ rollups, retentionDays: 400, logger, metrics });

beforeAll(() => ensureTables(client, { rollups: rollupsTable }));
afterAll(() => client.destroy());

const STATUSES = [200, 200, 200, 404, 401, 503];
const ROUTES = ['GET /v1/branch', 'GET /v1/members', 'GET /v1/payment-providers/{id}'];

/** Calls of one branch over three hours and two keys, statuses, routes and times varied. */
const callsOf = (branchId: string, n: number): UsageRecord[] =>
  Array.from({ length: n }, (_, i) => ({
    branch_id: branchId,
    key_id: i % 3 === 0 ? 'key_b' : 'key_a',
    method: 'GET',
    path: '/api/v1/branch',
    route: ROUTES[i % ROUTES.length]!,
    status: STATUSES[i % STATUSES.length]!,
    response_time_ms: (i * 37) % 400,
    timestamp: new Date(Date.UTC(2027, 0, 10, 8 + (i % 3), i % 60, 7)).toISOString(),
    request_id: `req-${branchId}-${i}`,
  }));

const changesOf = (calls: readonly UsageRecord[]): StreamChange[] =>
  calls.map((call, i) => ({
    eventName: 'INSERT',
    keys: marshall({ branch_id: call.branch_id, sk: `${call.timestamp}#${call.request_id}` }),
    newImage: marshall({ ...call, sk: `${call.timestamp}#${call.request_id}`, expires_at_epoch: 1 }),
    sequenceNumber: sequenceNumber(i + 1),
  }));

const deliver = async (changes: readonly StreamChange[]) => {
  const response = await aggregate(streamEvent(changes, 'arn:aws:dynamodb:local:000000000000:table/usage'));
  expect(response.batchItemFailures).toEqual([]);
};

/** Splits into consecutive batches of the given sizes (cycled). */
const split = <T>(items: readonly T[], sizes: readonly number[]): T[][] => {
  const batches: T[][] = [];
  for (let i = 0, s = 0; i < items.length; s += 1) {
    const size = sizes[s % sizes.length]!;
    batches.push(items.slice(i, i + size));
    i += size;
  }
  return batches;
};

/** What the hour items must hold, computed from the calls themselves. */
const expectedItems = (calls: readonly UsageRecord[]) => {
  const items = new Map<string, { calls: number; byStatus: Record<string, number>; histogram: number[] }>();
  for (const call of calls) {
    const id = `${hourOf(call.timestamp)} ${call.key_id}`;
    const item = items.get(id) ?? { calls: 0, byStatus: {}, histogram: [] };
    item.calls += 1;
    item.byStatus[call.status] = (item.byStatus[call.status] ?? 0) + 1;
    const bucket = bucketOf(call.response_time_ms);
    item.histogram[bucket] = (item.histogram[bucket] ?? 0) + 1;
    items.set(id, item);
  }
  return items;
};

const storedItems = async (branchId: string) => {
  const hours = await rollups.hours({ branchId, fromHour: '2027-01-10T00', toHour: '2027-01-11T00' });
  return new Map(
    hours.map((h: HourRollup) => [
      `${h.hour} ${h.keyId}`,
      { calls: h.calls, byStatus: h.byStatus, histogram: h.histogram },
    ]),
  );
};

const normalise = (items: Map<string, { calls: number; byStatus: Record<string, number>; histogram: unknown[] }>) =>
  Object.fromEntries(
    [...items.entries()].map(([id, item]) => [
      id,
      { ...item, histogram: Object.fromEntries(item.histogram.flatMap((n, i) => (n ? [[i, n]] : []))) },
    ]),
  );

describe('percentiles from the histogram', () => {
  const rollupOf = (times: number[]): HourRollup => {
    const histogram = new Array<number>(RESPONSE_TIME_BOUNDS_MS.length + 1).fill(0);
    for (const ms of times) histogram[bucketOf(ms)]! += 1;
    return { hour: 'h', keyId: 'k', calls: times.length, msSum: 0, byStatus: {}, byRoute: {}, histogram };
  };

  it('are the upper bound of the bucket holding the nearest rank', () => {
    const totals = totalsOf([rollupOf(Array.from({ length: 100 }, (_, i) => i + 1))]);
    // 50th of 1..100 is 50 (bucket ≤50); 95th is 95 and 99th is 99 (bucket ≤100).
    expect([totals.p50_ms, totals.p95_ms, totals.p99_ms]).toEqual([50, 100, 100]);
    expect(totalsOf([rollupOf([0.4, 1, 1.01])]).p99_ms).toBe(2);
  });

  it('add up across items, and report the last bound for what is slower', () => {
    const totals = totalsOf([rollupOf([3, 3, 3]), rollupOf([20_000])]);
    expect([totals.p50_ms, totals.p99_ms]).toEqual([3, 10_000]);
    expect(totalsOf([]).p50_ms).toBeNull();
  });
});

describe('aggregating the usage stream', () => {
  it('counts every call once, with its status, route and response-time bucket', async () => {
    const calls = callsOf('br_once', 240);
    for (const batch of split(changesOf(calls), [100])) await deliver(batch);

    expect(normalise(await storedItems('br_once'))).toEqual(normalise(expectedItems(calls)));
    const hours = await rollups.hours({ branchId: 'br_once', fromHour: '2027-01-10T00', toHour: '2027-01-11T00' });
    // What a summary reads: one item per key and hour with calls (3 such pairs here), not one per call (240).
    expect(hours).toHaveLength(3);
    const totals = totalsOf(hours);
    expect(totals.calls).toBe(240);
    expect(totals.by_status_class).toEqual({ '2xx': 120, '4xx': 80, '5xx': 40 });
    expect(totals.top_routes.map((r) => r.calls)).toEqual([80, 80, 80]);
  });

  it('keeps the same totals when batches are delivered twice, split differently and reordered', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 1, max: 70 }), { minLength: 1, maxLength: 5 }),
        fc.array(fc.integer({ min: 1, max: 70 }), { minLength: 1, maxLength: 5 }),
        fc.infiniteStream(fc.nat()),
        async (firstSizes, secondSizes, shuffleSeeds) => {
          run += 1;
          const branchId = `br_redeliver_${run}`;
          const calls = callsOf(branchId, 150);
          const changes = changesOf(calls);
          // A redelivered batch can overlap the first delivery in any way; its batches arrive in any order.
          const second = split(changes, secondSizes);
          const seeds = shuffleSeeds.take(second.length);
          const reordered = second
            .map((batch) => ({ batch, order: seeds.next().value as number }))
            .sort((a, b) => a.order - b.order)
            .map(({ batch }) => batch);
          await Promise.all(split(changes, firstSizes).map(deliver));
          for (const batch of reordered) await deliver(batch);
          // A batch with the same call twice in it.
          await deliver([changes[0]!, changes[0]!, changes[1]!]);

          expect(normalise(await storedItems(branchId))).toEqual(normalise(expectedItems(calls)));
        },
      ),
      { numRuns: 4 },
    );
  });

  it('keeps the newest call of each key as its last use, whatever the order', async () => {
    const calls = callsOf('br_last', 60);
    for (const batch of split(changesOf(calls).reverse(), [7])) await deliver(batch);
    const newest = (keyId: string) =>
      calls
        .filter((c) => c.key_id === keyId)
        .map((c) => c.timestamp)
        .sort()
        .at(-1);
    expect(await rollups.lastUsed('br_last')).toEqual(
      new Map([
        ['key_a', newest('key_a')],
        ['key_b', newest('key_b')],
      ]),
    );
  });

  it('ignores removals (TTL expiry) and skips records that are not usage records', async () => {
    const [call] = callsOf('br_skip', 1);
    const [insert] = changesOf([call!]);
    await deliver([
      { ...insert!, eventName: 'REMOVE', sequenceNumber: sequenceNumber(1) },
      { ...insert!, newImage: marshall({ branch_id: 'br_skip', sk: 'x', status: 'not a number' }) },
      { ...insert!, sequenceNumber: sequenceNumber(3) },
    ]);
    expect(totalsOf(await rollups.hours({ branchId: 'br_skip', fromHour: '2027', toHour: '2028' })).calls).toBe(1);
  });

  it('reports the batch as failed when the rollups cannot be written, so Lambda retries it', async () => {
    // A real failure: a repository over a table that does not exist.
    const broken = createUsageAggregator({
      rollups: new RollupsRepository(client, 'no-such-rollups-table'),
      retentionDays: 400,
      logger,
      metrics,
    });
    const changes = changesOf(callsOf('br_fail', 3));
    const response = await broken(streamEvent(changes, 'arn'));
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: changes[0]!.sequenceNumber }]);
  });
});
