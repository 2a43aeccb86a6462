/**
 * The in-process transport (lib/local/in-process-transport.ts): a client in the embedded DynamoDB's
 * own process reaches it without a socket, through the real AWS SDK (its signing, serialising and
 * parsing), with the same answers and errors as over HTTP, its deadline still honoured, and a
 * closed store refused as unavailable rather than crashing the process.
 */
import { CreateTableCommand, waitUntilTableExists } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { startEmbeddedDynamo, type EmbeddedDynamo } from '../../lib/local/dynamo';
import { useTransport } from '../../lib/local/in-process-transport';
import { createDocumentClient, translateDynamoError } from '../../shared/data/dynamodb';
import { DataStoreUnavailableError } from '../../shared/data/data-store-errors';

const TABLE = 'in-process';
/** A port nothing listens on: any call that tried a socket would fail. */
const CLOSED_PORT_ENDPOINT = 'http://127.0.0.1:9';

const clientFor = (store: EmbeddedDynamo) => {
  const client = createDocumentClient({
    endpoint: CLOSED_PORT_ENDPOINT,
    region: 'local',
    connectTimeoutMs: 500,
    requestTimeoutMs: 1000,
    maxAttempts: 1,
    deadlineMs: 2000,
  });
  useTransport(client, store.transport);
  return client;
};

let dynamo: EmbeddedDynamo;
beforeAll(async () => {
  dynamo = await startEmbeddedDynamo();
  await clientFor(dynamo).send(
    new CreateTableCommand({
      TableName: TABLE,
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: [
        { AttributeName: 'pk', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ],
      AttributeDefinitions: [
        { AttributeName: 'pk', AttributeType: 'S' },
        { AttributeName: 'sk', AttributeType: 'S' },
      ],
    }),
  );
  await waitUntilTableExists({ client: clientFor(dynamo), maxWaitTime: 10, minDelay: 0.05 }, { TableName: TABLE });
});
afterAll(() => dynamo.close());

it('writes, reads and queries through the SDK without a socket', async () => {
  const client = clientFor(dynamo);
  const before = dynamo.httpRequests();
  // Text outside ASCII and a large value survive the trip both ways.
  const item = { pk: 'br_1', sk: 'a#1', name: 'Café ☕ «quoted»', blob: 'x'.repeat(50_000) };
  await client.send(new PutCommand({ TableName: TABLE, Item: item }));
  await client.send(new PutCommand({ TableName: TABLE, Item: { pk: 'br_1', sk: 'a#2' } }));
  expect((await client.send(new GetCommand({ TableName: TABLE, Key: { pk: 'br_1', sk: 'a#1' } }))).Item).toEqual(item);
  const page = await client.send(
    new QueryCommand({
      TableName: TABLE,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': 'br_1' },
      ScanIndexForward: false,
    }),
  );
  expect(page.Items?.map((one) => one.sk)).toEqual(['a#2', 'a#1']);
  expect(dynamo.httpRequests()).toBe(before);
});

it("gives DynamoDB's own errors, as over HTTP", async () => {
  const client = clientFor(dynamo);
  await expect(
    client.send(new GetCommand({ TableName: 'no-such-table', Key: { pk: 'a', sk: 'b' } })),
  ).rejects.toMatchObject({
    name: 'ResourceNotFoundException',
  });
  await expect(
    client.send(
      new PutCommand({
        TableName: TABLE,
        Item: { pk: 'br_1', sk: 'a#1' },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    ),
  ).rejects.toMatchObject({ name: 'ConditionalCheckFailedException' });
});

it("honours the call's abort signal (the repositories' deadline)", async () => {
  const client = clientFor(dynamo);
  const controller = new AbortController();
  controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
  const error = await client
    .send(new GetCommand({ TableName: TABLE, Key: { pk: 'br_1', sk: 'a#1' } }), { abortSignal: controller.signal })
    .catch((thrown: unknown) => thrown);
  expect(translateDynamoError(error, 'GetItem')).toBeInstanceOf(DataStoreUnavailableError);
});

it('refuses calls once the store is closed, as unavailable, instead of crashing the process', async () => {
  const store = await startEmbeddedDynamo();
  const client = clientFor(store);
  await store.close();
  const error = await client
    .send(new GetCommand({ TableName: TABLE, Key: { pk: 'br_1', sk: 'a#1' } }))
    .catch((thrown: unknown) => thrown);
  expect(translateDynamoError(error, 'GetItem')).toBeInstanceOf(DataStoreUnavailableError);
});
