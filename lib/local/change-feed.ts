/**
 * The local change feed (docs/usage-rollups.md "Locally"): neither dynalite nor an external
 * DynamoDB without streams tells anyone of its writes, so the feed is a proxy in front of the
 * store, the endpoint every tool is given. It sees every write to the usage table made through
 * it (the gateway, the CLI, a script), captures what it changed (./change-capture.ts) and delivers
 * that as DynamoDB stream events to the aggregator (./stream-delivery.ts).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { operationOf, parseBody, startChangeCapture, type Item } from './change-capture';
import { fromBrowser, refuse } from './dynamo';
import { forwardRequest, readBody } from './forward';
import { listen } from './listen';
import { ShardedDelivery, type DeliveryOptions, type DeliveryStats } from './stream-delivery';

/** The feed's options: its delivery's (./stream-delivery.ts), of which only `handler` is required, and its own. */
export interface ChangeFeedOptions extends Omit<DeliveryOptions, 'tableArn' | 'setAside' | 'onError'> {
  /** The DynamoDB the proxy forwards to. */
  target: string;
  /** The table whose writes are fed. */
  tableName: string;
  /** Its key attributes, partition key first (to turn an item into the stream record's `Keys`). */
  keyAttributes: readonly string[];
  /** Keeps a record that failed every delivery (the dead-letter store). @default: dropped, reported to onError */
  setAside?: DeliveryOptions['setAside'];
  /**
   * Runs each write to the table, given the items it puts: what must hold before the write reaches
   * the store (the usage feed's crash mark) goes before `write()`. @default the write alone
   */
  aroundWrite?: <T>(puts: Item[], write: () => Promise<T>) => Promise<T>;
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

export type ChangeFeed = Awaited<ReturnType<typeof startChangeFeed>>;

/**
 * Sequence numbers that keep growing across restarts, as a stream's do: the feed's start in ms,
 * then a counter, so a call after a restart is never at or below a watermark saved before it.
 */
export const sequenceFrom = (startedAt: Date) => {
  const base = BigInt(startedAt.getTime()) * 10n ** 9n;
  let count = 0n;
  return (): string => (base + (count += 1n)).toString();
};

export const startChangeFeed = async (options: ChangeFeedOptions) => {
  const { target, tableName, keyAttributes } = options;
  const onError = options.onError ?? (() => undefined);
  const capture = startChangeCapture(target, new Map([[tableName, keyAttributes]]));
  // Per shard, in order, retried from the first failure, set aside after the last attempt.
  const delivery = new ShardedDelivery({
    ...options,
    tableArn: `arn:aws:dynamodb:local:000000000000:table/${tableName}`,
    setAside:
      options.setAside ??
      (async (change) => onError(new Error(`Stream record ${change.sequenceNumber} failed every delivery; dropped`))),
    onError,
  });
  const nextSequence = sequenceFrom(options.startedAt ?? new Date());
  const aroundWrite = options.aroundWrite ?? ((_puts, write) => write());

  /** A write to the table: its changes are queued before the writer gets the answer. */
  const write = (req: IncomingMessage, body: Buffer, operation: string, input: Record<string, unknown>) =>
    aroundWrite(
      capture.putsOf(operation, input).map(({ item }) => item),
      () =>
        capture.write(req, body, operation, input, (changes) => {
          for (const { eventName, keys, newImage } of changes) {
            const change = { eventName, keys, ...(newImage ? { newImage } : {}), sequenceNumber: nextSequence() };
            delivery.push(change, JSON.stringify(keys[keyAttributes[0]!]));
          }
        }),
    );

  let port = 0;
  const server: Server = createServer((req, res) => {
    // The same guard as the embedded DynamoDB's: no browser page, no rebound host name.
    if (fromBrowser(req, port)) {
      req.resume();
      return refuse(res);
    }
    const operation = operationOf(req);
    const writes = operation && /^(PutItem|BatchWriteItem|UpdateItem|DeleteItem)$/.test(operation);
    if (!writes && options.store) return options.store(req, res);
    void (async () => {
      const body = await readBody(req);
      // Only a body naming the table can write to it: the rest is not parsed.
      const input = writes && body.includes(tableName) ? parseBody(body) : {};
      if (!writes || !capture.touches(operation, input)) return forwardRequest(new URL(target), req, res, body);
      const answer = await write(req, body, operation, input);
      // Past the feed's bound the writer waits for deliveries: what it holds stays bounded.
      await delivery.room();
      res.writeHead(answer.statusCode, answer.headers).end(answer.body);
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
    /** Delivers everything observed so far without waiting out the window; resolves once it is delivered or set aside. */
    drain: () => delivery.drain(),
    /** The changes still to deliver (at most `maxPending` and the writes in flight). */
    pending: () => delivery.pending(),
    /** Delivered and set-aside changes. */
    stats: (): DeliveryStats => delivery.stats(),
    close: async () => {
      delivery.close();
      capture.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
};
