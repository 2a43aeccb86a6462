/**
 * The in-process transport (lib/local/in-process-transport.ts): a client in the embedded DynamoDB's
 * own process reaches it without a socket, through the real AWS SDK (its signing, serialising and
 * parsing), with the same answers and errors as over HTTP, its deadline still honoured, and a
 * closed store refused as unavailable rather than crashing the process.
 */
import { CreateTableCommand, waitUntilTableExists } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { startEmbeddedDynamo, type EmbeddedDynamo } from '../../lib/local/dynamo';
import {
  inProcessTransport,
  useEmbeddedStore,
  useTransport,
  type InProcessTransport,
} from '../../lib/local/in-process-transport';
import { createDocumentClient, translateDynamoError } from '../../shared/data/dynamodb';
import { DataStoreUnavailableError } from '../../shared/data/data-store-errors';

const TABLE = 'in-process';
/** A port nothing listens on: any call that tried a socket would fail. */
const CLOSED_PORT_ENDPOINT = 'http://127.0.0.1:9';

type SdkRequest = Parameters<InProcessTransport['handle']>[0];

/** The store's transport, telling `onHanded` of each request once it is in the store's hands. */
const handing = (store: EmbeddedDynamo, onHanded: (request: SdkRequest) => void): InProcessTransport => ({
  ...store.transport,
  handle: (...args) => {
    const answer = store.transport.handle(...args);
    onHanded(args[0]);
    return answer;
  },
});

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

it('closes only once the calls already in its hands are answered (Ctrl-C under load)', async () => {
  const store = await startEmbeddedDynamo();
  const client = clientFor(store);
  await client.send(
    new CreateTableCommand({
      TableName: TABLE,
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
    }),
  );
  await waitUntilTableExists({ client, maxWaitTime: 10, minDelay: 0.05 }, { TableName: TABLE });
  // The store is closed the moment the 20th write is handed to it, with that one (and others) in
  // its hands: before, dynalite then threw "Database is closed" where nothing could catch it.
  let handed = 0;
  let closing: Promise<void> | undefined;
  useTransport(
    client,
    handing(store, () => {
      handed += 1;
      if (handed === 20) closing = store.close();
    }),
  );
  const writes = Array.from({ length: 100 }, (_, at) =>
    client.send(new PutCommand({ TableName: TABLE, Item: { pk: `closing#${at}`, value: 'x'.repeat(1000) } })),
  );
  const outcomes = await Promise.allSettled(writes);
  await closing;
  const refused = outcomes.flatMap((outcome) => (outcome.status === 'rejected' ? [outcome.reason as unknown] : []));
  for (const error of refused) expect(translateDynamoError(error, 'PutItem')).toBeInstanceOf(DataStoreUnavailableError);
  // Every write handed over before the close was answered.
  expect(outcomes.length - refused.length).toBeGreaterThanOrEqual(20);
});

it('counts a call its store throws on at once as no longer in its hands', async () => {
  const transport = inProcessTransport(
    () => {
      throw new Error('store fault');
    },
    () => true,
  );
  const request = { method: 'POST', path: '/', headers: {} };
  await expect(transport.handle(request)).rejects.toThrow('store fault');
  await expect(transport.settled()).resolves.toBeUndefined();
});

describe('useEmbeddedStore: no signature computed for a store that never checks one', () => {
  /** The Authorization header of every request the store's transport is handed. */
  const seenBy = (store: EmbeddedDynamo) => {
    const seen: string[] = [];
    const spying = handing(store, (request) => seen.push(request.headers.authorization ?? ''));
    return { seen, spying };
  };

  it('reads and writes through the SDK with an unsigned header of SigV4 shape, which the store accepts', async () => {
    const client = clientFor(dynamo);
    const { seen, spying } = seenBy(dynamo);
    useEmbeddedStore(client, spying);
    const item = { pk: 'br_unsigned', sk: 'a#1', name: 'no signature' };
    await client.send(new PutCommand({ TableName: TABLE, Item: item }));
    expect((await client.send(new GetCommand({ TableName: TABLE, Key: { pk: item.pk, sk: item.sk } }))).Item).toEqual(
      item,
    );
    expect(seen).toHaveLength(2);
    for (const header of seen) {
      expect(header).toMatch(/^AWS4-HMAC-SHA256 Credential=local\/\d{8}\/local\/dynamodb\/aws4_request, /);
      expect(header).toContain('Signature=unsigned');
    }
  });

  it('leaves a client given only the transport signing as deployed (what the overhead bench measures)', async () => {
    const client = clientFor(dynamo);
    const { seen, spying } = seenBy(dynamo);
    useTransport(client, spying);
    await client.send(new GetCommand({ TableName: TABLE, Key: { pk: 'br_1', sk: 'a#2' } }));
    expect(seen).toEqual([expect.stringMatching(/Signature=[0-9a-f]{64}$/)]);
  });
});
