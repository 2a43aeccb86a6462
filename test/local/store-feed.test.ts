/**
 * The change feed inside the embedded DynamoDB (lib/local/write-capture.ts), as `npm start` runs
 * it: writes to the usage table, whoever makes them, reach the aggregator as DynamoDB Streams
 * records them (a put that changes nothing is no record), with no proxy in front of the store; a
 * write that failed is never fed; delivery keeps its guarantees (in order per shard, retried,
 * set aside).
 */
import { DeleteItemCommand, PutItemCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { startChangeFeed, type ChangeFeed, type ChangeFeedOptions } from '../../lib/local/change-feed';
import { startEmbeddedDynamo, type EmbeddedDynamo } from '../../lib/local/dynamo';
import type { StreamChange } from '../../lib/local/stream-events';
import { createOperatorContext, type OperatorContext } from '../../lib/operator/context';
import { ensureTables } from '../../lib/operator/tables';
import type { UsageRecord } from '../../shared/domain/usage-record';
import { USAGE_BY_KEY_INDEX, usageTable } from '../../shared/data/tables';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { usageShardOf } from '../../shared/data/repositories/usage-shards';
import { tableNames } from '../support/harness';

let dynamo: EmbeddedDynamo;
let ctx: OperatorContext;
let feed: ChangeFeed | undefined;

beforeAll(async () => {
  dynamo = await startEmbeddedDynamo();
  ctx = createOperatorContext({ ...process.env, DYNAMODB_ENDPOINT: dynamo.endpoint });
  await ensureTables(ctx.client, { usage: tableNames.usage, keys: tableNames.keys });
});
afterEach(async () => {
  await feed?.close();
  feed = undefined;
});
afterAll(async () => {
  ctx.close();
  await dynamo.close();
});

let calls = 0;
const aCall = (branchId: string, requestId = `req-${(calls += 1)}`): UsageRecord => ({
  branch_id: branchId,
  key_id: 'key_feed',
  method: 'GET',
  path: '/api/v1/branch',
  route: 'GET /v1/branch',
  status: 200,
  response_time_ms: 5,
  timestamp: new Date().toISOString(),
  request_id: requestId,
});

type Handler = ChangeFeedOptions['handler'];
const feedInto = (handler: Handler, more: Partial<ChangeFeedOptions> = {}) =>
  startChangeFeed({
    target: dynamo.endpoint,
    store: dynamo,
    tableName: tableNames.usage,
    keyAttributes: [usageTable.partitionKey.name, usageTable.sortKey!.name],
    handler,
    batchWindowMs: 5,
    retryDelayMs: 5,
    ...more,
  });

/** A handler that keeps every record it is given. */
const recording = () => {
  const records: DynamoDBRecord[] = [];
  const handler: Handler = async (event: DynamoDBStreamEvent) => {
    records.push(...event.Records);
    return { batchItemFailures: [] };
  };
  return { records, handler };
};
const requestIdOf = (record: DynamoDBRecord) => record.dynamodb?.NewImage?.request_id?.S;

it('feeds each write to the usage table once, as DynamoDB Streams records it, at the store’s own endpoint', async () => {
  const { records, handler } = recording();
  feed = await feedInto(handler);
  expect(feed.endpoint).toBe(dynamo.endpoint);
  const first = aCall('br_feed_a');
  await ctx.usage.put(first, 90);
  await ctx.usage.put(first, 90); // an SDK retry of a put that had succeeded: no change, no record
  await ctx.usage.putBatch([first, aCall('br_feed_a', 'batched')], 90);
  // Writes to another table are not the usage table's stream.
  await ctx.client.send(new PutItemCommand({ TableName: tableNames.keys, Item: { key_hash: { S: 'not-fed' } } }));
  await feed.drain();
  expect(records.map((record) => [record.eventName, requestIdOf(record)])).toEqual([
    ['INSERT', first.request_id],
    ['INSERT', 'batched'],
  ]);
  expect(records[0]!.dynamodb?.Keys).toEqual({
    pk: records[0]!.dynamodb?.NewImage?.pk,
    sk: records[0]!.dynamodb?.NewImage?.sk,
  });

  // A changed item is a MODIFY with its new image; a delete is a REMOVE of its keys.
  const keys = records[0]!.dynamodb!.Keys as Record<string, AttributeValue>;
  const changed = { ...(records[0]!.dynamodb!.NewImage as Record<string, AttributeValue>), status: { N: '500' } };
  await ctx.client.send(new PutItemCommand({ TableName: tableNames.usage, Item: changed }));
  await ctx.client.send(new DeleteItemCommand({ TableName: tableNames.usage, Key: keys }));
  await feed.drain();
  expect(records.slice(2).map((record) => [record.eventName, record.dynamodb?.NewImage?.status?.N])).toEqual([
    ['MODIFY', '500'],
    ['REMOVE', undefined],
  ]);
  expect(records[3]!.dynamodb?.Keys).toEqual(keys);
  expect(feed.stats()).toMatchObject({ delivered: 4, setAside: 0 });
});

it('never feeds a write that failed (a condition that did not hold)', async () => {
  const { records, handler } = recording();
  feed = await feedInto(handler);
  const record = aCall('br_feed_b');
  await ctx.usage.put(record, 90);
  await feed.drain();
  const [stored] = records;
  const refused = ctx.client.send(
    new PutItemCommand({
      TableName: tableNames.usage,
      Item: { ...(stored!.dynamodb!.NewImage as Record<string, AttributeValue>), status: { N: '404' } },
      ConditionExpression: 'attribute_not_exists(pk)',
    }),
  );
  await expect(refused).rejects.toMatchObject({ name: 'ConditionalCheckFailedException' });
  await feed.drain();
  expect(records).toHaveLength(1);
});

it('delivers in write order per shard, retries a failed batch from the failed record and sets a poisoned one aside', async () => {
  const seen: string[] = [];
  const setAside: string[] = [];
  let failuresLeft = 2;
  const handler: Handler = async (event) => {
    for (const record of event.Records) {
      const id = requestIdOf(record)!;
      if (id === 'poisoned') return { batchItemFailures: [{ itemIdentifier: record.dynamodb!.SequenceNumber! }] };
      if (id === 'flaky' && failuresLeft > 0) {
        failuresLeft -= 1;
        return { batchItemFailures: [{ itemIdentifier: record.dynamodb!.SequenceNumber! }] };
      }
      seen.push(id);
    }
    return { batchItemFailures: [] };
  };
  feed = await feedInto(handler, {
    shards: 1,
    maxAttempts: 3,
    setAside: async (change: StreamChange) => void setAside.push(change.newImage!.request_id!.S!),
  });
  // One at a time: the order of the writes is the order they were stored.
  const order = ['r1', 'flaky', 'r2', 'poisoned', 'r3'];
  for (const id of order) await ctx.usage.put(aCall('br_feed_c', id), 90);
  await feed.drain();
  expect(seen).toEqual(['r1', 'flaky', 'r2', 'r3']);
  expect(setAside).toEqual(['poisoned']);
  expect(feed.stats()).toMatchObject({ delivered: 4, setAside: 1 });
});

it('takes one observer at a time, and a closed feed observes nothing more', async () => {
  const { records, handler } = recording();
  feed = await feedInto(handler);
  await expect(feedInto(handler)).rejects.toThrow(/already has a write observer/);
  await feed.close();
  await ctx.usage.put(aCall('br_feed_d'), 90);
  feed = await feedInto(handler);
  await ctx.usage.put(aCall('br_feed_d', 'after-reopen'), 90);
  await feed.drain();
  expect(records.map(requestIdOf)).toEqual(['after-reopen']);
});

describe('what the store holds', () => {
  it('keeps each call once per table and index, and serves each call its own record from both', async () => {
    const before = (await dynamo.storedData())!;
    // Calls alike in every length (one write shard, ids of one length), so only their content differs.
    const ids = Array.from({ length: 90 }, (_, i) => `held-${i + 10}`);
    const sameShard = ids.filter((id) => usageShardOf(id) === usageShardOf(ids[0]!)).slice(0, 3);
    const records = sameShard.map((id) => ({ ...aCall('br_store', id), key_id: `key_${id}` }));
    expect(records).toHaveLength(3);
    for (const record of records) await ctx.usage.put(record, 90);
    const after = (await dynamo.storedData())!;
    const grown = (part: string) => after.byPart[part]!.entries - (before.byPart[part]?.entries ?? 0);
    expect(grown(`item-${tableNames.usage}`)).toBe(3);
    const indexPart = Object.keys(after.byPart).find((part) => part.startsWith(`index-global~${tableNames.usage}~`));
    expect(grown(indexPart!)).toBe(3);
    expect(after.entries - before.entries).toBe(6);
    // One item's index entry and table entry share a string; each entry still holds its own call.
    const pairs = (items: Record<string, unknown>[] = []) =>
      items
        .filter((item) => item.branch_id === 'br_store')
        .map((item) => `${String(item.key_id)} ${String(item.request_id)}`)
        .sort();
    const expected = records.map((record) => `${record.key_id} ${record.request_id}`).sort();
    const table = await ctx.client.send(new ScanCommand({ TableName: tableNames.usage }));
    const index = await ctx.client.send(
      new ScanCommand({ TableName: tableNames.usage, IndexName: USAGE_BY_KEY_INDEX }),
    );
    expect([pairs(table.Items), pairs(index.Items)]).toEqual([expected, expected]);
  });

  it('holds each call once for its item and index entry when other writes come in between', async () => {
    const before = (await dynamo.storedData())!;
    const records = Array.from({ length: 40 }, (_, i) => ({ ...aCall('br_shared'), key_id: `key_shared_${i % 4}` }));
    // All at once, each beside a write to another table (an item with no index entry), as under load.
    const others = records.map((_, i) =>
      ctx.client.send(new PutItemCommand({ TableName: tableNames.keys, Item: { key_hash: { S: `shared-${i}` } } })),
    );
    await Promise.all([...records.map((record) => ctx.usage.put(record, 90)), ...others]);
    const after = (await dynamo.storedData())!;
    expect(after.entries - before.entries).toBe(40 * 3);
    expect(after.valuesShared - before.valuesShared).toBe(40);
  });
});
