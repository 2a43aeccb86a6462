/**
 * The recording proxy a verified function talks to: every call is recorded with its table and
 * index, and each change to a streamed table is captured as its stream would show it, whoever
 * wrote it and with whichever write action.
 */
import {
  BatchWriteItemCommand,
  CreateTableCommand,
  DeleteItemCommand,
  DynamoDBClient,
  PutItemCommand,
  QueryCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { startEmbeddedDynamo, type EmbeddedDynamo } from '../../lib/local/dynamo';
import { startRecordingProxy, type RecordingProxy } from '../../lib/verify/recording-proxy';

let dynamo: EmbeddedDynamo;
let proxy: RecordingProxy;
let client: DynamoDBClient;
const credentials = { accessKeyId: 'test', secretAccessKey: 'test' };

beforeAll(async () => {
  dynamo = await startEmbeddedDynamo();
  const raw = new DynamoDBClient({ endpoint: dynamo.endpoint, region: 'us-east-1', credentials });
  for (const TableName of ['streamed', 'plain']) {
    await raw.send(
      new CreateTableCommand({
        TableName,
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
        BillingMode: 'PAY_PER_REQUEST',
      }),
    );
  }
  raw.destroy();
  proxy = await startRecordingProxy(dynamo.endpoint, new Map([['streamed', ['pk']]]));
  client = new DynamoDBClient({ endpoint: proxy.endpoint, region: 'us-east-1', credentials, maxAttempts: 1 });
});

afterAll(async () => {
  client.destroy();
  await proxy.close();
  await dynamo.close();
});

it('captures inserts, updates and deletes of a streamed table with their images, in order', async () => {
  await client.send(new PutItemCommand({ TableName: 'streamed', Item: { pk: { S: 'a' }, n: { N: '1' } } }));
  await client.send(
    new UpdateItemCommand({
      TableName: 'streamed',
      Key: { pk: { S: 'a' } },
      UpdateExpression: 'ADD n :one',
      ExpressionAttributeValues: { ':one': { N: '1' } },
    }),
  );
  // A write that changes nothing has no stream record.
  await client.send(new PutItemCommand({ TableName: 'streamed', Item: { pk: { S: 'a' }, n: { N: '2' } } }));
  await client.send(
    new BatchWriteItemCommand({
      RequestItems: {
        streamed: [{ PutRequest: { Item: { pk: { S: 'b' } } } }, { DeleteRequest: { Key: { pk: { S: 'a' } } } }],
        plain: [{ PutRequest: { Item: { pk: { S: 'c' } } } }],
      },
    }),
  );
  await client.send(new DeleteItemCommand({ TableName: 'streamed', Key: { pk: { S: 'b' } } }));
  await client.send(new PutItemCommand({ TableName: 'plain', Item: { pk: { S: 'd' } } }));
  await proxy.settled();

  expect(proxy.writes.map(({ table, keys, oldImage, newImage }) => ({ table, keys, oldImage, newImage }))).toEqual([
    { table: 'streamed', keys: { pk: { S: 'a' } }, oldImage: undefined, newImage: { pk: { S: 'a' }, n: { N: '1' } } },
    {
      table: 'streamed',
      keys: { pk: { S: 'a' } },
      oldImage: { pk: { S: 'a' }, n: { N: '1' } },
      newImage: { pk: { S: 'a' }, n: { N: '2' } },
    },
    { table: 'streamed', keys: { pk: { S: 'b' } }, oldImage: undefined, newImage: { pk: { S: 'b' } } },
    { table: 'streamed', keys: { pk: { S: 'a' } }, oldImage: { pk: { S: 'a' }, n: { N: '2' } }, newImage: undefined },
    { table: 'streamed', keys: { pk: { S: 'b' } }, oldImage: { pk: { S: 'b' } }, newImage: undefined },
  ]);
});

it('counts a put of the same attributes in another order, sets included, as no change', async () => {
  proxy.writes.length = 0;
  const item = { pk: { S: 'same' }, tags: { SS: ['a', 'b'] }, n: { N: '1' } };
  await client.send(new PutItemCommand({ TableName: 'streamed', Item: item }));
  await client.send(
    new PutItemCommand({ TableName: 'streamed', Item: { n: { N: '1' }, tags: { SS: ['b', 'a'] }, pk: { S: 'same' } } }),
  );
  await client.send(new DeleteItemCommand({ TableName: 'streamed', Key: { pk: { S: 'never-written' } } }));
  await proxy.settled();
  expect(proxy.writes.map(({ keys, oldImage }) => ({ keys, oldImage }))).toEqual([
    { keys: { pk: { S: 'same' } }, oldImage: undefined },
  ]);
});

it('records each call with its table and index, and refuses writes when told to', async () => {
  proxy.operations.length = 0;
  await client.send(
    new QueryCommand({
      TableName: 'plain',
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': { S: 'c' } },
    }),
  );
  proxy.failWrites = true;
  await expect(
    client.send(new PutItemCommand({ TableName: 'streamed', Item: { pk: { S: 'x' } } })),
  ).rejects.toMatchObject({ name: 'ProvisionedThroughputExceededException' });
  proxy.failWrites = false;
  expect(proxy.operations).toEqual([
    { action: 'dynamodb:Query', table: 'plain' },
    { action: 'dynamodb:PutItem', table: 'streamed' },
  ]);
});

// Before the drain, this test crashed the process with dynalite's `Database is closed`, as verify runs did at random.
it('closes only once every call it accepted has been answered and every image read, so none reaches a closed database', async () => {
  const second = await startRecordingProxy(dynamo.endpoint, new Map([['streamed', ['pk']]]));
  const caller = new DynamoDBClient({ endpoint: second.endpoint, region: 'us-east-1', credentials, maxAttempts: 1 });
  const writes = Array.from({ length: 20 }, (_, i) =>
    caller.send(new PutItemCommand({ TableName: 'streamed', Item: { pk: { S: `drain-${i}` } } })),
  );
  // Every call has arrived (counted, not timed), none is answered yet for sure: close now.
  while (second.operations.length < writes.length) await new Promise((resolve) => setImmediate(resolve));
  await second.close();
  const outcomes = await Promise.allSettled(writes);
  expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(20);
  // Each write's stream images were read before close returned.
  expect(second.writes.filter((write) => JSON.stringify(write.keys).includes('drain-'))).toHaveLength(20);
  caller.destroy();
});
