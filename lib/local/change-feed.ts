/**
 * The local change feed (docs/usage-rollups.md "Locally"): the embedded DynamoDB has no streams,
 * so the feed sees every write to the usage table, whoever makes it (the gateway, the CLI, a
 * script) — from inside the embedded DynamoDB (lib/local/write-capture.ts), or through a proxy in
 * front of an external one — and delivers them as DynamoDB stream events to the aggregator, as the
 * event source mapping does on AWS: in order, in batches (at most `batchSize` records, at most
 * `batchWindowMs` after the first), retried until they succeed.
 */
import type { AddressInfo } from 'node:net';
import { fromBrowser, refuse, type EmbeddedDynamo } from './dynamo';
import { readBody } from './forward';
import { listen } from './listen';
import { createServer, request, type IncomingHttpHeaders, type IncomingMessage, type Server } from 'node:http';
import { DynamoDBClient, GetItemCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import type { StreamChange } from './stream-events';
import { createKeyLocks, putEvent, readBefore } from './before-images';
import { ShardedDelivery, type DeliveryOptions, type DeliveryStats } from './stream-delivery';

type Item = Record<string, AttributeValue>;

export interface ChangeFeedOptions extends Pick<
  DeliveryOptions,
  'shards' | 'batchSize' | 'batchWindowMs' | 'retryDelayMs' | 'maxAttempts'
> {
  /** The DynamoDB the proxy forwards to. */
  target: string;
  /**
   * The embedded DynamoDB to observe from inside instead (lib/local/write-capture.ts): no proxy,
   * one HTTP hop per call; the feed's endpoint is the store's own.
   */
  store?: EmbeddedDynamo;
  /** The table whose writes are fed. */
  tableName: string;
  /** Its key attributes, partition key first (to turn an item into the stream record's `Keys`). */
  keyAttributes: readonly string[];
  handler: DeliveryOptions['handler'];
  /** Keeps a record that failed every delivery (the dead-letter store). @default: dropped, reported to onError */
  setAside?: DeliveryOptions['setAside'];
  /** @default 0 (a free port) */
  port?: number;
  /** @default '127.0.0.1' */
  host?: string;
  onError?: (error: unknown) => void;
}

export interface ChangeFeed {
  endpoint: string;
  port: number;
  /** Resolves once everything observed so far has been delivered or set aside. */
  drain(): Promise<void>;
  /** Delivered and set-aside changes and, per delivered change, the time from the write's response to its delivery. */
  stats(): DeliveryStats;
  close(): Promise<void>;
}

const WRITE_TARGET = /^DynamoDB_20120810\.(PutItem|BatchWriteItem|UpdateItem|DeleteItem)$/;

const parse = (body: Buffer): Record<string, unknown> => {
  try {
    return JSON.parse(body.toString('utf8')) as Record<string, unknown>;
  } catch {
    return {};
  }
};

interface Answer {
  statusCode: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** Sends a request on to the DynamoDB behind the proxy and reads its whole answer. */
const forwardTo = (targetUrl: URL, req: IncomingMessage, body: Buffer) =>
  new Promise<Answer>((resolve, reject) => {
    const upstream = request({
      host: targetUrl.hostname,
      port: targetUrl.port,
      method: req.method,
      path: req.url,
      // As a reverse proxy does: the upstream sees its own address as Host. The body may have
      // been rewritten (ReturnValues added): its own length.
      headers: { ...req.headers, host: targetUrl.host, 'content-length': String(body.length) },
    });
    upstream.on('error', reject);
    upstream.on('response', (answer) => {
      readBody(answer).then(
        (answerBody) => resolve({ statusCode: answer.statusCode ?? 502, headers: answer.headers, body: answerBody }),
        reject,
      );
    });
    upstream.end(body);
  });

/** What the proxy makes of a write to the fed table: the stream changes DynamoDB would record. */
const changeObserver = ({
  tableName,
  keyAttributes,
  reader,
  delivery,
}: {
  tableName: string;
  keyAttributes: readonly string[];
  reader: DynamoDBClient;
  delivery: ShardedDelivery;
}) => {
  const keysOf = (item: Item): Item =>
    Object.fromEntries(keyAttributes.filter((name) => item[name]).map((name) => [name, item[name]!]));
  const observe = (eventName: StreamChange['eventName'], keys: Item, newImage?: Item) =>
    delivery.push({ eventName, keys, ...(newImage ? { newImage } : {}) }, JSON.stringify(keys[keyAttributes[0]!]));

  /** The items a write puts into the table (what its before-images are read for). */
  const putsOf = (operation: string, input: Record<string, unknown>): Item[] => {
    if (operation === 'PutItem') return input.TableName === tableName ? [input.Item as Item] : [];
    if (operation !== 'BatchWriteItem') return [];
    const requests = ((input.RequestItems as Record<string, unknown[]> | undefined)?.[tableName] ?? []) as {
      PutRequest?: { Item: Item };
    }[];
    return requests.flatMap((entry) => (entry.PutRequest ? [entry.PutRequest.Item] : []));
  };

  /** A put as DynamoDB Streams records it: INSERT, MODIFY, or nothing when it changed nothing. */
  const observePut = (item: Item, before: Map<string, Item>) => {
    const keys = keysOf(item);
    const event = putEvent(before.get(JSON.stringify(keys)), item);
    if (event) observe(event, keys, item);
  };

  /** Turns a successful write to the table into stream changes, in the order DynamoDB applied it. */
  const changesOf = async (
    operation: string,
    input: Record<string, unknown>,
    output: Record<string, unknown>,
    before: Map<string, Item>,
  ) => {
    if (operation === 'BatchWriteItem') {
      const requests = (input.RequestItems as Record<string, unknown[]> | undefined)?.[tableName] ?? [];
      const unprocessed = new Set(
        ((output.UnprocessedItems as Record<string, unknown[]> | undefined)?.[tableName] ?? []).map((r) =>
          JSON.stringify(r),
        ),
      );
      for (const entry of requests as { PutRequest?: { Item: Item }; DeleteRequest?: { Key: Item } }[]) {
        if (unprocessed.has(JSON.stringify(entry))) continue;
        if (entry.PutRequest) observePut(entry.PutRequest.Item, before);
        else if (entry.DeleteRequest) observe('REMOVE', entry.DeleteRequest.Key);
      }
      return;
    }
    if (input.TableName !== tableName) return;
    if (operation === 'PutItem') observePut(input.Item as Item, before);
    else if (operation === 'DeleteItem') observe('REMOVE', input.Key as Item);
    else if (operation === 'UpdateItem') {
      // The stream carries the item as written: read it back.
      const { Item: image } = await reader.send(
        new GetItemCommand({ TableName: tableName, Key: input.Key as Item, ConsistentRead: true }),
      );
      if (image) observe('MODIFY', input.Key as Item, image);
    }
  };
  return { keysOf, putsOf, changesOf };
};

/** Delivery as Lambda's: per shard, in order, retried from the first failure, set aside after the last attempt. */
const createDelivery = (options: ChangeFeedOptions, tableName: string, onError: (error: unknown) => void) =>
  new ShardedDelivery({
    tableArn: `arn:aws:dynamodb:local:000000000000:table/${tableName}`,
    handler: options.handler,
    setAside:
      options.setAside ??
      (async (change) => onError(new Error(`Stream record ${change.sequenceNumber} failed every delivery; dropped`))),
    onError,
    ...Object.fromEntries(
      (['shards', 'batchSize', 'batchWindowMs', 'retryDelayMs', 'maxAttempts'] as const)
        .filter((name) => options[name] !== undefined)
        .map((name) => [name, options[name]]),
    ),
  });

type Observer = ReturnType<typeof changeObserver>;

/**
 * The writes the feed forwards: each one, if it succeeded, has its changes queued before the
 * writer gets the answer (a write it saw succeed is already on its way). Puts of the same keys run
 * one at a time, so the item read before a BatchWriteItem is the one it replaces.
 */
const createWriter = (
  {
    targetUrl,
    reader,
    tableName,
    onError,
  }: { targetUrl: URL; reader: DynamoDBClient; tableName: string; onError: (error: unknown) => void },
  { keysOf, putsOf, changesOf }: Observer,
) => {
  const exclusive = createKeyLocks();

  /**
   * A PutItem on the fed table, asking DynamoDB for the item it replaced (`ALL_OLD`) in the same
   * atomic write; the writer gets the answer it asked for.
   */
  const putReturningOld = async (req: IncomingMessage, input: Record<string, unknown>) => {
    const answer = await forwardTo(targetUrl, req, Buffer.from(JSON.stringify({ ...input, ReturnValues: 'ALL_OLD' })));
    const output = parse(answer.body);
    const old = output.Attributes as Item | undefined;
    const before = new Map<string, Item>(old ? [[JSON.stringify(keysOf(input.Item as Item)), old]] : []);
    if (input.ReturnValues === 'ALL_OLD' || answer.statusCode !== 200) return { answer, output, before };
    const { Attributes: _old, ...asked } = output;
    const { 'x-amz-crc32': _crc, ...headers } = answer.headers;
    const answerBody = Buffer.from(JSON.stringify(asked));
    return {
      answer: { ...answer, headers: { ...headers, 'content-length': String(answerBody.length) }, body: answerBody },
      output,
      before,
    };
  };

  return async (req: IncomingMessage, body: Buffer, operation: string | undefined): Promise<Answer> => {
    if (!operation) return forwardTo(targetUrl, req, body);
    const input = parse(body);
    const keys = putsOf(operation, input).map(keysOf);
    return exclusive(
      keys.map((key) => JSON.stringify(key)),
      async () => {
        if (operation === 'PutItem' && keys.length === 1) {
          const { answer, output, before } = await putReturningOld(req, input);
          if (answer.statusCode === 200) await changesOf(operation, input, output, before).catch(onError);
          return answer;
        }
        const before =
          keys.length === 0
            ? new Map<string, Item>()
            : await readBefore(reader, tableName, keys).catch((error: unknown) => {
                onError(error);
                return new Map<string, Item>();
              });
        const answer = await forwardTo(targetUrl, req, body);
        if (answer.statusCode === 200) {
          await changesOf(operation, input, parse(answer.body), before).catch(onError);
        }
        return answer;
      },
    );
  };
};

/** The feed inside the embedded DynamoDB: each write reported where it is stored, as DynamoDB Streams records it. */
const observeStore = (store: EmbeddedDynamo, delivery: ShardedDelivery, tableName: string, partitionKey: string) => {
  const stop = store.observeWrites({
    tableName,
    observe: ({ keys, before, after }) => {
      const eventName = after ? putEvent(before, after) : 'REMOVE';
      if (!eventName) return;
      delivery.push({ eventName, keys, ...(after ? { newImage: after } : {}) }, JSON.stringify(keys[partitionKey]));
    },
  });
  return {
    endpoint: store.endpoint,
    port: store.port,
    drain: () => delivery.drain(),
    stats: () => delivery.stats(),
    close: async () => {
      stop();
      delivery.close();
    },
  };
};

export const startChangeFeed = async (options: ChangeFeedOptions): Promise<ChangeFeed> => {
  const { target, tableName, keyAttributes } = options;
  const onError = options.onError ?? (() => undefined);
  if (options.store) {
    return observeStore(options.store, createDelivery(options, tableName, onError), tableName, keyAttributes[0]!);
  }
  const targetUrl = new URL(target);
  const reader = new DynamoDBClient({
    endpoint: target,
    region: 'local',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });

  const delivery = createDelivery(options, tableName, onError);

  const observer = changeObserver({ tableName, keyAttributes, reader, delivery });

  const write = createWriter({ targetUrl, reader, tableName, onError }, observer);

  const server: Server = createServer((req, res) => {
    // The same guard as the embedded DynamoDB's: no browser page, no rebound host name.
    if (fromBrowser(req, (server.address() as AddressInfo).port)) {
      req.resume();
      return refuse(res);
    }
    void (async () => {
      const body = await readBody(req);
      const operation = WRITE_TARGET.exec(String(req.headers['x-amz-target'] ?? ''))?.[1];
      const answer = await write(req, body, operation);
      res.writeHead(answer.statusCode, answer.headers);
      res.end(answer.body);
    })().catch((error: unknown) => {
      onError(error);
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
  });

  const port = await listen(server, options.port ?? 0, options.host ?? '127.0.0.1');

  return {
    endpoint: `http://${options.host ?? '127.0.0.1'}:${port}`,
    port,
    drain: () => delivery.drain(),
    stats: () => delivery.stats(),
    close: async () => {
      delivery.close();
      reader.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
};
