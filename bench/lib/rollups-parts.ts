/**
 * Parts of bench/rollups.ts: the 100,000-call hour (aggregated, then rebuilt), the replay of a
 * log of failed records, and the largest rollup item.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetCommand, ScanCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { createOperatorContext, type OperatorContext } from '../../lib/operator/context';
import { rebuildRollups } from '../../lib/operator/usage-rebuild';
import { replayUsageLog, USAGE_NOT_STORED_MESSAGE } from '../../lib/operator/usage-replay';
import { streamEvent, usageChange } from '../../lib/local/stream-events';
import type { UsageRecord } from '../../shared/domain/usage-record';
import type { TableNames } from '../../shared/data/tables';
import { hourItemSk, hourOf, itemSizeBytes } from '../../shared/domain/rollups';
import { round } from './stats';

const HOUR_MS = 3_600_000;
const log = (line: string) => process.stderr.write(`[rollups] ${line}\n`);

const operatorContext = (endpoint: string, tables: TableNames): OperatorContext =>
  createOperatorContext({
    DYNAMODB_ENDPOINT: endpoint,
    KEYS_TABLE: tables.keys,
    USAGE_TABLE: tables.usage,
    BRANCH_DATA_TABLE: tables.branchData,
    ROLLUPS_TABLE: tables.rollups,
    RATE_LIMITS_TABLE: tables.rateLimits,
    DYNAMODB_CONNECT_TIMEOUT_MS: '5000',
    DYNAMODB_REQUEST_TIMEOUT_MS: '10000',
    DYNAMODB_DEADLINE_MS: '30000',
  });

const putBranch = (ctx: OperatorContext, id: string) =>
  ctx.branchData.putBranch({
    id,
    name: id,
    business_name: 'Bench B.V.',
    timezone: 'Europe/Amsterdam',
    currency: 'EUR',
    address: { line1: 'Bench 1', city: 'Amsterdam', postal_code: '1000 AA', country: 'NL' },
    created_at: '2026-01-01T00:00:00.000Z',
    members: [],
    payment_providers: [],
  });

const aCall = (branchId: string, keyId: string, hourStart: number, i: number, total: number): UsageRecord => ({
  branch_id: branchId,
  key_id: keyId,
  method: 'GET',
  path: '/api/v1/branch',
  route: i % 3 ? 'GET /v1/branch' : 'GET /v1/members',
  status: i % 50 === 0 ? 503 : i % 10 === 0 ? 404 : 200,
  response_time_ms: 2 + ((i * 7919) % 120),
  timestamp: new Date(hourStart + Math.floor((HOUR_MS * i) / total)).toISOString(),
  request_id: `flood-${i}`,
});

export interface FloodOptions {
  client: DynamoDBDocumentClient;
  aggregate: (event: DynamoDBStreamEvent) => Promise<DynamoDBBatchResponse>;
  endpoint: string;
  tables: TableNames;
  calls: number;
}

/** One key, one hour, `calls` calls: aggregated from the stream, then rebuilt from the raw records. */
export const benchFlood = async ({ client, aggregate, endpoint, tables, calls }: FloodOptions) => {
  const ctx = operatorContext(endpoint, tables);
  const branchId = 'br_flood';
  const hour = hourOf(Date.now() - 3 * HOUR_MS);
  await putBranch(ctx, branchId);
  const records = Array.from({ length: calls }, (_, i) => aCall(branchId, 'key_flood', Date.parse(hour), i, calls));
  log(`one hour of ${calls} calls of one key: storing the raw records`);
  for (let i = 0; i < records.length; i += 10_000) {
    const chunk = records.slice(i, i + 10_000);
    await Promise.all([0, 1, 2, 3].map((k) => ctx.usage.putBatch(chunk.slice(k * 2500, (k + 1) * 2500), 1)));
  }
  log('aggregating them as stream batches of 100');
  const started = performance.now();
  for (let i = 0; i < records.length; i += 100) {
    const batch = records.slice(i, i + 100).map((r, j) => usageChange(r, i + j + 1));
    if ((await aggregate(streamEvent(batch, 'arn'))).batchItemFailures.length > 0)
      throw new Error('aggregation failed');
  }
  const aggregateSeconds = (performance.now() - started) / 1000;
  const key = { branch_id: branchId, sk: hourItemSk(hour, 'key_flood') };
  const { Item } = await client.send(new GetCommand({ TableName: tables.rollups, Key: key }));
  if (Item?.calls !== calls) throw new Error(`the hour item counts ${String(Item?.calls)} of ${calls} calls`);

  log('rebuilding that hour from the raw records');
  const rebuildStarted = performance.now();
  const heapBefore = process.memoryUsage().heapUsed;
  const rebuilt = await rebuildRollups(ctx, {
    branchId,
    since: hour,
    until: new Date(Date.parse(hour) + HOUR_MS).toISOString(),
  });
  const rebuildSeconds = (performance.now() - rebuildStarted) / 1000;
  if (rebuilt.calls_after !== calls || rebuilt.calls_before !== calls) {
    throw new Error(`rebuild: ${rebuilt.calls_before} → ${rebuilt.calls_after} of ${calls}`);
  }
  ctx.close();
  return {
    aggregatorRecordsPerSecond: Math.round(calls / aggregateSeconds),
    itemBytes: itemSizeBytes(Item),
    rebuildSeconds: round(rebuildSeconds, 2),
    rebuildHeapGrowthMb: round((process.memoryUsage().heapUsed - heapBefore) / 1_048_576, 1),
  };
};

/** A log of `records` failed records of one key, replayed twice (the second run writes nothing). */
export const benchReplay = async ({
  endpoint,
  tables,
  records,
}: {
  endpoint: string;
  tables: TableNames;
  records: number;
}) => {
  const ctx = operatorContext(endpoint, tables);
  const branchId = 'br_replay';
  await putBranch(ctx, branchId);
  const { record: key } = await ctx.keys.create({ branchId, scopes: ['read'] });
  const dir = await mkdtemp(join(tmpdir(), 'bench-replay-'));
  const file = join(dir, 'function.log');
  const start = Date.now() - HOUR_MS;
  const lines = Array.from({ length: records }, (_, i) =>
    JSON.stringify({
      level: 'ERROR',
      message: USAGE_NOT_STORED_MESSAGE,
      usage_record: { ...aCall(branchId, key.key_id, start, i, records), request_id: `replay-${i}` },
    }),
  );
  await writeFile(file, `${lines.join('\n')}\n`);
  log(`replaying a log of ${records} failed records`);
  const started = performance.now();
  const first = await replayUsageLog(ctx, file);
  const seconds = (performance.now() - started) / 1000;
  const againStarted = performance.now();
  const again = await replayUsageLog(ctx, file);
  const againSeconds = (performance.now() - againStarted) / 1000;
  ctx.close();
  if (first.stored !== records || again.stored !== 0) {
    throw new Error(`replay stored ${first.stored}, then ${again.stored}, of ${records}`);
  }
  return {
    records,
    seconds: round(seconds, 2),
    recordsPerSecond: Math.round(records / seconds),
    secondRunSeconds: round(againSeconds, 2),
  };
};

/** The largest item of the rollups table, in bytes as DynamoDB counts them. */
export const largestItem = async (client: DynamoDBDocumentClient, table: string): Promise<number> => {
  let largest = 0;
  let start: Record<string, unknown> | undefined;
  do {
    const page = await client.send(new ScanCommand({ TableName: table, ExclusiveStartKey: start }));
    for (const item of page.Items ?? []) largest = Math.max(largest, itemSizeBytes(item));
    start = page.LastEvaluatedKey;
  } while (start);
  return largest;
};
