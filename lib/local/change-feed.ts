/**
 * The local change feed (docs/usage-rollups.md "Locally"): neither dynalite nor an external
 * DynamoDB without streams tells anyone of its writes, so the feed is a proxy in front of the
 * store, the endpoint every tool is given. It sees every write to the usage table made through
 * it (the gateway, the CLI, a script) and delivers them as DynamoDB stream events to the
 * aggregator (./stream-delivery.ts).
 */
import { fromBrowser, refuse } from './dynamo';
import { forwardRequest, readBody } from './forward';
import { listen } from './listen';
import {
  createServer,
  request,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { DynamoDBClient, GetItemCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import type { StreamChange } from './stream-events';
import { createKeyLocks, putEvent, readBefore } from './before-images';
import { ShardedDelivery, type DeliveryOptions, type DeliveryStats } from './stream-delivery';

type Item = Record<string, AttributeValue>;

export interface ChangeFeedOptions extends Pick<
  DeliveryOptions,
  'shards' | 'batchSize' | 'batchWindowMs' | 'retryDelayMs' | 'maxAttempts' | 'maxPending' | 'storeDown'
> {
  /** The DynamoDB the proxy forwards to. */
  target: string;
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
  /**
   * The store's own handler when it runs in this process (lib/local/dynamo.ts): requests that
   * write nothing go to it directly, without a second HTTP exchange. @default all over HTTP
   */
  store?: (request: IncomingMessage, response: ServerResponse) => void;
  /** When the feed starts: its sequence numbers begin there. @default now */
  startedAt?: Date;
}

export interface ChangeFeed {
  endpoint: string;
  port: number;
  /** Delivers everything observed so far without waiting out the window; resolves once it is delivered or set aside. */
  drain(): Promise<void>;
  /** When the oldest change still to deliver was written (epoch ms); undefined when none is. */
  oldestPending(): number | undefined;
  /** Delivered and set-aside changes. */
  stats(): DeliveryStats;
  close(): Promise<void>;
}

/**
 * Sequence numbers that keep growing across restarts, as a stream's do: the feed's start in ms,
 * then a counter, so a call after a restart is never at or below a watermark saved before it.
 */
export const sequenceFrom = (startedAt: Date) => {
  const base = BigInt(startedAt.getTime()) * 10n ** 9n;
  let count = 0n;
  return (): string => (base + (count += 1n)).toString();
};

const WRITE_TARGET = /^DynamoDB_20120810\.(PutItem|BatchWriteItem|UpdateItem|DeleteItem)$/;

type Input = Record<string, unknown>;

const parse = (body: Buffer): Input => {
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
  nextSequence,
}: {
  tableName: string;
  keyAttributes: readonly string[];
  reader: DynamoDBClient;
  delivery: ShardedDelivery;
  nextSequence: () => string;
}) => {
  const keysOf = (item: Item): Item =>
    Object.fromEntries(keyAttributes.filter((name) => item[name]).map((name) => [name, item[name]!]));
  const observe = (eventName: StreamChange['eventName'], keys: Item, newImage?: Item) =>
    delivery.push(
      { eventName, keys, ...(newImage ? { newImage } : {}), sequenceNumber: nextSequence() },
      JSON.stringify(keys[keyAttributes[0]!]),
    );

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

/** Per shard, in order, retried from the first failure, set aside after the last attempt. */
const createDelivery = (options: ChangeFeedOptions, tableName: string, onError: (error: unknown) => void) =>
  new ShardedDelivery({
    tableArn: `arn:aws:dynamodb:local:000000000000:table/${tableName}`,
    handler: options.handler,
    setAside:
      options.setAside ??
      (async (change) => onError(new Error(`Stream record ${change.sequenceNumber} failed every delivery; dropped`))),
    onError,
    ...Object.fromEntries(
      (['shards', 'batchSize', 'batchWindowMs', 'retryDelayMs', 'maxAttempts', 'maxPending', 'storeDown'] as const)
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

  return async (req: IncomingMessage, body: Buffer, input: Input, operation: string): Promise<Answer> => {
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

export const startChangeFeed = async (options: ChangeFeedOptions): Promise<ChangeFeed> => {
  const { target, tableName, keyAttributes } = options;
  const onError = options.onError ?? (() => undefined);
  const targetUrl = new URL(target);
  const reader = new DynamoDBClient({
    endpoint: target,
    region: 'local',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });

  const delivery = createDelivery(options, tableName, onError);

  const nextSequence = sequenceFrom(options.startedAt ?? new Date());
  const observer = changeObserver({ tableName, keyAttributes, reader, delivery, nextSequence });

  const write = createWriter({ targetUrl, reader, tableName, onError }, observer);

  /** A write naming the fed table (a BatchWriteItem among others); anything else passes through. */
  const writesFedTable = (input: Input) =>
    input.TableName === tableName || Object.hasOwn((input.RequestItems as object | undefined) ?? {}, tableName);

  let port = 0;
  const server: Server = createServer((req, res) => {
    // The same guard as the embedded DynamoDB's: no browser page, no rebound host name.
    if (fromBrowser(req, port)) {
      req.resume();
      return refuse(res);
    }
    const operation = WRITE_TARGET.exec(String(req.headers['x-amz-target'] ?? ''))?.[1];
    if (!operation && options.store) return options.store(req, res);
    void (async () => {
      const body = await readBody(req);
      // Only a body naming the table can write to it: the rest is not parsed.
      const input = operation && body.includes(tableName) ? parse(body) : {};
      if (!operation || !writesFedTable(input)) return forwardRequest(targetUrl, req, res, body);
      const answer = await write(req, body, input, operation);
      // Past the feed's bound the writer waits for deliveries: what it holds stays bounded.
      await delivery.room();
      res.writeHead(answer.statusCode, answer.headers);
      res.end(answer.body);
    })().catch((error: unknown) => {
      onError(error);
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
  });

  port = await listen(server, options.port ?? 0, options.host ?? '127.0.0.1');

  return {
    endpoint: `http://${options.host ?? '127.0.0.1'}:${port}`,
    port,
    drain: () => delivery.drain(),
    oldestPending: () => delivery.oldestPending(),
    stats: () => delivery.stats(),
    close: async () => {
      delivery.close();
      reader.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
};
