/**
 * The change feed in front of the embedded DynamoDB, as `npm start` runs it: writes to the usage
 * table, whoever makes them through its endpoint, reach the aggregator as DynamoDB Streams records
 * them (a put that changes nothing is no record); a write that failed is never fed; delivery keeps
 * its guarantees (in order per shard, retried, set aside); numbers continue across restarts.
 */
import { DeleteItemCommand, PutItemCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { startChangeFeed, type ChangeFeed, type ChangeFeedOptions } from '../../lib/local/change-feed';
import { startEmbeddedDynamo, type EmbeddedDynamo } from '../../lib/local/dynamo';
import type { StreamChange } from '../../lib/local/stream-events';
import { createOperatorContext, type OperatorContext } from '../../lib/operator/context';
import { ensureTables } from '../../lib/operator/tables';
import type { UsageRecord } from '../../shared/domain/usage-record';
import { usageTable } from '../../shared/data/tables';
import { tableNames } from '../support/harness';

let dynamo: EmbeddedDynamo;
let ctx: OperatorContext;
let feed: ChangeFeed | undefined;
let writer: OperatorContext | undefined;
/** A client of the feed's endpoint, as every tool of `npm start` is given. */
const through = () => (writer ??= createOperatorContext({ ...process.env, DYNAMODB_ENDPOINT: feed!.endpoint }));

beforeAll(async () => {
  dynamo = await startEmbeddedDynamo();
  ctx = createOperatorContext({ ...process.env, DYNAMODB_ENDPOINT: dynamo.endpoint });
  await ensureTables(ctx.client, { usage: tableNames.usage, keys: tableNames.keys });
});
afterEach(async () => {
  writer?.close();
  writer = undefined;
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

it('feeds each write to the usage table once, as DynamoDB Streams records it', async () => {
  const { records, handler } = recording();
  feed = await feedInto(handler);
  const first = aCall('br_feed_a');
  await through().usage.put(first, 90);
  await through().usage.put(first, 90); // an SDK retry of a put that had succeeded: no change, no record
  await through().usage.putBatch([first, aCall('br_feed_a', 'batched')], 90);
  // Writes to another table are not the usage table's stream.
  await through().client.send(new PutItemCommand({ TableName: tableNames.keys, Item: { key_hash: { S: 'not-fed' } } }));
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
  await through().client.send(new PutItemCommand({ TableName: tableNames.usage, Item: changed }));
  await through().client.send(new DeleteItemCommand({ TableName: tableNames.usage, Key: keys }));
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
  await through().usage.put(record, 90);
  await feed.drain();
  const [stored] = records;
  const refused = through().client.send(
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
  for (const id of order) await through().usage.put(aCall('br_feed_c', id), 90);
  await feed.drain();
  expect(seen).toEqual(['r1', 'flaky', 'r2', 'r3']);
  expect(setAside).toEqual(['poisoned']);
  expect(feed.stats()).toMatchObject({ delivered: 4, setAside: 1 });
});

it('numbers records past every number of an earlier start, as a stream does across restarts', async () => {
  const first = recording();
  feed = await feedInto(first.handler, { startedAt: new Date(Date.now() - 60_000) });
  for (let i = 0; i < 3; i += 1) await through().usage.put(aCall('br_feed_d'), 90);
  await feed.drain();
  expect(first.records).toHaveLength(3);
  await feed.close();
  writer!.close();
  writer = undefined;
  const second = recording();
  feed = await feedInto(second.handler);
  await through().usage.put(aCall('br_feed_d', 'after-restart'), 90);
  await feed.drain();
  const numbers = (records: DynamoDBRecord[]) => records.map((r) => BigInt(r.dynamodb!.SequenceNumber!));
  expect(numbers(second.records)[0]! > numbers(first.records).reduce((a, b) => (a > b ? a : b))).toBe(true);
});
