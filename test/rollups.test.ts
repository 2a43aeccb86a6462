/**
 * Rollups stay exact under the stream's at-least-once, per-shard-ordered delivery: the
 * aggregator (the deployed handler's logic, shared/lambda/usage-stream.ts) against the real
 * embedded DynamoDB, fed batches as Lambda's event source mapping can deliver them — redelivered,
 * split anywhere, retried from the middle after a partial failure, shards interleaved, many
 * branches, keys and hours per batch — and compared with a count of the calls themselves.
 */
import { USAGE_WRITE_SHARDS } from '../shared/data/tables';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { faultyClient } from './support/faulty-client';
import fc from 'fast-check';
import { readDynamoDbSettings } from '../shared/config/env';
import { createDocumentClient } from '../shared/data/dynamodb';
import { logger, metrics } from '../shared/lambda/observability';
import { RollupsRepository } from '../shared/data/repositories/rollups';
import type { UsageRecord } from '../shared/domain/usage-record';
import {
  bucketOf,
  hourItemSk,
  hourOf,
  padSequence,
  RESPONSE_TIME_BOUNDS_MS,
  totalsOf,
  type HourRollup,
} from '../shared/domain/rollups';
import { itemSize } from '../shared/domain/item-size';
import { createUsageAggregator } from '../shared/lambda/usage-stream';
import { ensureTables } from '../lib/operator/tables';
import { sequenceNumber, streamEvent, usageChange, type StreamChange } from '../lib/local/stream-events';

const client = createDocumentClient(readDynamoDbSettings(process.env));
const rollupsTable = process.env.ROLLUPS_TABLE!;
const rollups = new RollupsRepository(client, rollupsTable);
const aggregatorOver = (repository: RollupsRepository) =>
  createUsageAggregator({ rollups: repository, retentionDays: 400, logger, metrics });
const aggregate = aggregatorOver(rollups);
const ARN = 'arn:aws:dynamodb:local:000000000000:table/usage';

beforeAll(() => ensureTables(client, { rollups: rollupsTable }));
afterAll(() => client.destroy());

const STATUSES = [200, 200, 200, 404, 401, 503];
const ROUTES = ['GET /v1/branch', 'GET /v1/members', 'GET /v1/payment-providers/{id}'];
const HOUR0 = Date.UTC(2026, 0, 10, 8);

const aCall = (branchId: string, keyId: string, hour: number, i: number): UsageRecord => ({
  branch_id: branchId,
  key_id: keyId,
  method: 'GET',
  path: '/api/v1/branch',
  route: ROUTES[i % ROUTES.length]!,
  status: STATUSES[i % STATUSES.length]!,
  response_time_ms: (i * 37) % 4000,
  timestamp: new Date(HOUR0 + hour * 3_600_000 + ((i * 7919) % 3_600_000)).toISOString(),
  request_id: `req-${branchId}-${i}`,
});

type Expected = {
  calls: number;
  msSum: number;
  byStatus: Record<string, number>;
  byRoute: Record<string, number>;
  histogram: Record<number, number>;
};

/** What the hour items must hold, counted from the calls themselves. */
const expectedItems = (calls: readonly UsageRecord[]) => {
  const items: Record<string, Expected> = {};
  for (const call of calls) {
    const id = `${call.branch_id} ${hourOf(call.timestamp)} ${call.key_id}`;
    const item = (items[id] ??= { calls: 0, msSum: 0, byStatus: {}, byRoute: {}, histogram: {} });
    item.calls += 1;
    item.msSum += call.response_time_ms;
    item.byStatus[call.status] = (item.byStatus[call.status] ?? 0) + 1;
    item.byRoute[call.route] = (item.byRoute[call.route] ?? 0) + 1;
    const bucket = bucketOf(call.response_time_ms);
    item.histogram[bucket] = (item.histogram[bucket] ?? 0) + 1;
  }
  return items;
};

const storedItems = async (branchIds: readonly string[]) => {
  const items: Record<string, Expected> = {};
  for (const branchId of branchIds) {
    for (const h of await rollups.hours({ branchId, fromHour: '2026-01-10T00', toHour: '2026-01-11T00' })) {
      items[`${branchId} ${h.hour} ${h.keyId}`] = {
        calls: h.calls,
        msSum: h.msSum,
        byStatus: h.byStatus,
        byRoute: h.byRoute,
        histogram: Object.fromEntries(h.histogram.flatMap((n, i) => (n ? [[i, n]] : []))),
      };
    }
  }
  return items;
};

interface Step {
  size: number;
  /** Lambda retries from this record although the batch succeeded (its invocation timed out after applying). */
  cut: number | null;
  /** The same batch delivered again. */
  again: boolean;
}

/**
 * Delivers one shard's records as the event source mapping does: in order, in batches; a
 * partial-batch failure (or a lost answer) is retried from the first failed record.
 */
const deliverShard = async (
  changes: readonly StreamChange[],
  steps: readonly Step[],
  handler: typeof aggregate,
): Promise<void> => {
  let position = 0;
  for (let step = 0; position < changes.length; step += 1) {
    if (step > 5000) throw new Error('delivery did not converge');
    const plan = steps[step % steps.length]!;
    const batch = changes.slice(position, position + plan.size);
    const { batchItemFailures } = await handler(streamEvent(batch, ARN));
    const failed = batchItemFailures[0]?.itemIdentifier;
    let next = position + batch.length;
    if (failed !== undefined) next = position + batch.findIndex((c) => c.sequenceNumber === failed);
    else if (plan.cut !== null && plan.cut % batch.length > 0) next = position + (plan.cut % batch.length);
    if (plan.again) await handler(streamEvent(batch, ARN));
    position = next;
  }
};

const stepArb = fc.record({
  size: fc.integer({ min: 1, max: 40 }),
  cut: fc.option(fc.nat({ max: 39 })),
  again: fc.boolean(),
});

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

describe('sequence numbers', () => {
  it('compare as numbers once padded, whatever their length; anything else is not one', () => {
    const sequences = ['9', '10', '100000000000000000000', '49999999999999999999999999999999999999'];
    const padded = sequences.map((s) => padSequence(s)!);
    expect([...padded].sort()).toEqual(padded);
    expect(padded.every((p) => p.length === 40)).toBe(true);
    expect([padSequence('12a'), padSequence(''), padSequence(undefined), padSequence('1'.repeat(41))]).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });
});

describe('aggregating the usage stream', () => {
  let run = 0;

  it('counts every call exactly once however the shards deliver it (redelivered, split, retried from the middle, faults)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            branch: fc.nat({ max: 1 }),
            key: fc.nat({ max: 1 }),
            hour: fc.nat({ max: 1 }),
            writeShard: fc.nat({ max: 1 }),
          }),
          { minLength: 1, maxLength: 160 },
        ),
        fc.array(stepArb, { minLength: 1, maxLength: 6 }),
        fc.array(stepArb, { minLength: 1, maxLength: 6 }),
        fc.array(fc.constantFrom(undefined, undefined, 'before' as const, 'after' as const), {
          minLength: 1,
          maxLength: 8,
        }),
        async (shape, stepsA, stepsB, faults) => {
          run += 1;
          const branches = [0, 1, 2].map((b) => `br_p${run}_${b}`);
          const calls = shape.map((s, i) => aCall(branches[s.branch]!, `key_${s.key}`, s.hour, i));
          // Two stream shards; a record's shard follows its usage partition key (branch + write shard).
          const shards: StreamChange[][] = [[], []];
          shape.forEach((s, i) => {
            const shard = (s.branch + s.writeShard) % 2;
            const sequence = (shards[shard]!.length + 1) * 2 + shard;
            shards[shard]!.push(usageChange(calls[i]!, sequence, `${calls[i]!.branch_id}#${s.writeShard}`));
          });
          let updates = 0;
          // Faults only in the first updates, so every delivery eventually succeeds.
          const handler = aggregatorOver(
            new RollupsRepository(
              faultyClient(client, () => (updates++ < 40 ? faults[updates % faults.length] : undefined)),
              rollupsTable,
            ),
          );
          await Promise.all([deliverShard(shards[0]!, stepsA, handler), deliverShard(shards[1]!, stepsB, handler)]);

          expect(await storedItems(branches)).toEqual(expectedItems(calls));
        },
      ),
      { numRuns: 25 },
    );
  });

  it('counts 100,000 calls of one key in one hour exactly, in one item of bounded size', async () => {
    const N = 100_000;
    const BATCH = 1000; // the event source mapping allows up to 10,000
    const calls = Array.from({ length: N }, (_, i) => aCall('br_flood', 'key_flood', 0, i));
    const changes = calls.map((call, i) => usageChange(call, i + 1));
    for (let i = 0; i < N; i += BATCH) {
      const { batchItemFailures } = await aggregate(streamEvent(changes.slice(i, i + BATCH), ARN));
      expect(batchItemFailures).toEqual([]);
      // Every tenth batch delivered again, overlapping the next one.
      if (i % (10 * BATCH) === 0) await aggregate(streamEvent(changes.slice(i + BATCH / 2, i + 2 * BATCH), ARN));
    }
    const { Item } = await client.send(
      new GetCommand({
        TableName: rollupsTable,
        Key: { branch_id: 'br_flood', sk: hourItemSk(hourOf(HOUR0), 'key_flood') },
      }),
    );
    expect(Item!.calls).toBe(N);
    expect(await storedItems(['br_flood'])).toEqual(expectedItems(calls));
    // The bound (docs/usage-rollups.md "Bounds"): counters and one watermark per source (one per
    // usage write shard here), whatever the calls.
    expect(itemSize(Item!)).toBeLessThan(1024 + USAGE_WRITE_SHARDS * 64);
  }, 60_000);

  it('applies the other branches of a batch when one record cannot be applied, and reports that record', async () => {
    const poisoned = aCall('br_poison', 'key_poison', 0, 1);
    const healthy = [0, 2, 3].map((i) => aCall('br_healthy', 'key_a', 0, i));
    const changes = [healthy[0]!, poisoned, healthy[1]!, healthy[2]!].map((c, i) => usageChange(c, i + 1));
    // Injected fault: every write to the poisoned key's item fails.
    const handler = aggregatorOver(
      new RollupsRepository(
        faultyClient(client, (input) => (String(input.Key?.sk).endsWith('key_poison') ? 'before' : undefined)),
        rollupsTable,
      ),
    );
    const response = await handler(streamEvent(changes, ARN));
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: changes[1]!.sequenceNumber }]);
    expect(totalsOf(await rollups.hours({ branchId: 'br_healthy', fromHour: '2026', toHour: '2027' })).calls).toBe(3);
    // Lambda retries from the poisoned record: what followed it adds nothing twice.
    await handler(streamEvent(changes.slice(1), ARN));
    expect(totalsOf(await rollups.hours({ branchId: 'br_healthy', fromHour: '2026', toHour: '2027' })).calls).toBe(3);
    expect(await rollups.hours({ branchId: 'br_poison', fromHour: '2026', toHour: '2027' })).toEqual([]);
    // The progress stops before the failed record: "as of" never claims more than was applied.
    expect(await rollups.progress()).toEqual(expect.any(String));
  });

  it('keeps the newest accepted call of each key as its last use and the newest refused one apart, whatever the order', async () => {
    const calls = Array.from({ length: 60 }, (_, i) => aCall('br_last', i % 3 ? 'key_a' : 'key_b', i % 3, i));
    const changes = calls.map((c, i) => usageChange(c, i + 1)).reverse();
    for (let i = 0; i < changes.length; i += 7) await aggregate(streamEvent(changes.slice(i, i + 7), ARN));
    // Counted here without the aggregator: 401, 403 and 429 are refusals, anything else a use.
    const newest = (keyId: string, refused: boolean) =>
      calls
        .filter((c) => c.key_id === keyId && [401, 403, 429].includes(c.status) === refused)
        .sort((a, b) => (a.timestamp < b.timestamp ? -1 : 1))
        .at(-1);
    const use = (keyId: string) => {
      const [used, refused] = [newest(keyId, false), newest(keyId, true)];
      return {
        ...(used ? { last_used_at: used.timestamp } : {}),
        ...(refused ? { last_refused_at: refused.timestamp, last_refused_status: refused.status } : {}),
      };
    };
    expect(await rollups.lastUsed('br_last')).toEqual(
      new Map([
        ['key_a', use('key_a')],
        ['key_b', use('key_b')],
      ]),
    );
    expect(use('key_a').last_refused_at).toBeDefined();
  });

  it('ignores removals (TTL expiry) and modifications, and skips records that are not usage records', async () => {
    const insert = usageChange(aCall('br_skip', 'key_a', 0, 0), 3);
    const { batchItemFailures } = await aggregate(
      streamEvent(
        [
          { ...insert, eventName: 'REMOVE', sequenceNumber: sequenceNumber(1) },
          { ...insert, eventName: 'MODIFY', sequenceNumber: sequenceNumber(2) },
          {
            ...usageChange(aCall('br_skip', 'key_a', 0, 1), 4),
            newImage: { branch_id: { S: 'br_skip' }, status: { S: 'x' } },
          },
          { ...usageChange(aCall('br_skip', 'key_a', 0, 2), 5), sequenceNumber: 'not-a-number' },
          insert,
        ],
        ARN,
      ),
    );
    expect(batchItemFailures).toEqual([]);
    expect(totalsOf(await rollups.hours({ branchId: 'br_skip', fromHour: '2026', toHour: '2027' })).calls).toBe(1);
  });

  it('reports the batch from its first record when the rollups cannot be written at all', async () => {
    // A real failure: a repository over a table that does not exist.
    const broken = aggregatorOver(new RollupsRepository(client, 'no-such-rollups-table'));
    const changes = [0, 1, 2].map((i) => usageChange(aCall('br_fail', 'key_a', 0, i), i + 1));
    const response = await broken(streamEvent(changes, ARN));
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: changes[0]!.sequenceNumber }]);
  });
});
