/**
 * The local change feed (docs/usage-rollups.md "Locally"): the embedded DynamoDB has no streams,
 * so a proxy in front of it sees every write to the usage table, whoever makes it (the gateway,
 * the CLI, a script), and delivers them as DynamoDB stream events to the aggregator, as the
 * event source mapping does on AWS: in order, in batches (at most `batchSize` records, at most
 * `batchWindowMs` after the first), retried until they succeed.
 */
import type { AddressInfo } from 'node:net';
import { fromBrowser, refuse } from './dynamo';
import { readBody } from './forward';
import { listen } from './listen';
import { createServer, request, type Server } from 'node:http';
import { DynamoDBClient, GetItemCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import type { Context, DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { join } from 'node:path';
import { usageTable } from '../../shared/data/tables';
import { AGGREGATOR_ENTRY } from '../../shared/lambda/usage-stream';
import { buildContext } from './events';
import { PROJECT_ROOT } from './gateway';
import { invokeFunction } from './invoke';
import { sequenceNumber, streamEvent, type StreamChange } from './stream-events';

type Item = Record<string, AttributeValue>;

export interface ChangeFeedOptions {
  /** The DynamoDB the proxy forwards to. */
  target: string;
  /** The table whose writes are fed. */
  tableName: string;
  /** Its key attributes (to turn an item into the stream record's `Keys`). */
  keyAttributes: readonly string[];
  handler: (event: DynamoDBStreamEvent) => Promise<DynamoDBBatchResponse | void>;
  /** @default 0 (a free port) */
  port?: number;
  /** @default '127.0.0.1' */
  host?: string;
  /** @default 100 */
  batchSize?: number;
  /** @default 200 */
  batchWindowMs?: number;
  /** Wait before a failed batch is delivered again. @default 1000 */
  retryDelayMs?: number;
  onError?: (error: unknown) => void;
}

export interface ChangeFeed {
  endpoint: string;
  port: number;
  /** Resolves once everything observed so far has been delivered. */
  drain(): Promise<void>;
  /** Delivered changes and, per change, the time from the write's response to its delivery. */
  stats(): { delivered: number; lagsMs: number[] };
  close(): Promise<void>;
}

const MAX_LAGS_KEPT = 100_000;
const WRITE_TARGET = /^DynamoDB_20120810\.(PutItem|BatchWriteItem|UpdateItem|DeleteItem)$/;

const parse = (body: Buffer): Record<string, unknown> => {
  try {
    return JSON.parse(body.toString('utf8')) as Record<string, unknown>;
  } catch {
    return {};
  }
};

export const startChangeFeed = async (options: ChangeFeedOptions): Promise<ChangeFeed> => {
  const { target, tableName, keyAttributes, handler } = options;
  const batchSize = options.batchSize ?? 100;
  const batchWindowMs = options.batchWindowMs ?? 200;
  const retryDelayMs = options.retryDelayMs ?? 1000;
  const onError = options.onError ?? (() => undefined);
  const targetUrl = new URL(target);
  const reader = new DynamoDBClient({
    endpoint: target,
    region: 'local',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });

  const queue: { change: StreamChange; observedAt: number }[] = [];
  const lagsMs: number[] = [];
  let sequence = 0;
  let delivered = 0;
  let closed = false;
  let idle: (() => void)[] = [];

  const keysOf = (item: Item): Item =>
    Object.fromEntries(keyAttributes.filter((name) => item[name]).map((name) => [name, item[name]!]));
  const observe = (eventName: StreamChange['eventName'], keys: Item, newImage?: Item) => {
    sequence += 1;
    queue.push({
      change: { eventName, keys, ...(newImage ? { newImage } : {}), sequenceNumber: sequenceNumber(sequence) },
      observedAt: performance.now(),
    });
    schedule();
  };

  /** Turns a successful write to the table into stream changes, in the order DynamoDB applied it. */
  const changesOf = async (operation: string, input: Record<string, unknown>, output: Record<string, unknown>) => {
    if (operation === 'BatchWriteItem') {
      const requests = (input.RequestItems as Record<string, unknown[]> | undefined)?.[tableName] ?? [];
      const unprocessed = new Set(
        ((output.UnprocessedItems as Record<string, unknown[]> | undefined)?.[tableName] ?? []).map((r) =>
          JSON.stringify(r),
        ),
      );
      for (const entry of requests as { PutRequest?: { Item: Item }; DeleteRequest?: { Key: Item } }[]) {
        if (unprocessed.has(JSON.stringify(entry))) continue;
        if (entry.PutRequest) observe('INSERT', keysOf(entry.PutRequest.Item), entry.PutRequest.Item);
        else if (entry.DeleteRequest) observe('REMOVE', entry.DeleteRequest.Key);
      }
      return;
    }
    if (input.TableName !== tableName) return;
    if (operation === 'PutItem') observe('INSERT', keysOf(input.Item as Item), input.Item as Item);
    else if (operation === 'DeleteItem') observe('REMOVE', input.Key as Item);
    else if (operation === 'UpdateItem') {
      // The stream carries the item as written: read it back.
      const { Item: image } = await reader.send(
        new GetItemCommand({ TableName: tableName, Key: input.Key as Item, ConsistentRead: true }),
      );
      if (image) observe('MODIFY', input.Key as Item, image);
    }
  };

  const server: Server = createServer((req, res) => {
    // The same guard as the embedded DynamoDB's: no browser page, no rebound host name.
    if (fromBrowser(req, (server.address() as AddressInfo).port)) {
      req.resume();
      return refuse(res);
    }
    void (async () => {
      const body = await readBody(req);
      const operation = WRITE_TARGET.exec(String(req.headers['x-amz-target'] ?? ''))?.[1];
      const upstream = request({
        host: targetUrl.hostname,
        port: targetUrl.port,
        method: req.method,
        path: req.url,
        // As a reverse proxy does: the upstream sees its own address as Host.
        headers: { ...req.headers, host: targetUrl.host },
      });
      upstream.on('error', () => {
        if (!res.headersSent) res.writeHead(502);
        res.end();
      });
      upstream.on('response', (answer) => {
        void (async () => {
          const answerBody = await readBody(answer);
          // Observed before the writer gets its answer: a write it saw succeed is already queued.
          if (operation && answer.statusCode === 200) {
            await changesOf(operation, parse(body), parse(answerBody)).catch(onError);
          }
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          res.end(answerBody);
        })().catch(onError);
      });
      upstream.end(body);
    })().catch((error: unknown) => {
      onError(error);
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
  });

  let timer: NodeJS.Timeout | undefined;
  let delivering = false;
  function schedule(delayMs = batchWindowMs) {
    if (timer || delivering || closed) return;
    timer = setTimeout(
      () => {
        timer = undefined;
        void pump();
      },
      queue.length >= batchSize ? 0 : delayMs,
    );
  }

  const pump = async () => {
    delivering = true;
    try {
      while (queue.length > 0 && !closed) {
        const batch = queue.slice(0, batchSize);
        let failed = false;
        try {
          const response = await handler(
            streamEvent(
              batch.map((entry) => entry.change),
              `arn:aws:dynamodb:local:000000000000:table/${tableName}`,
            ),
          );
          failed = (response?.batchItemFailures.length ?? 0) > 0;
        } catch (error) {
          onError(error);
          failed = true;
        }
        if (failed) {
          // As the event source mapping does: the same records again, later (applying is idempotent).
          await new Promise((resolve) => setTimeout(resolve, retryDelayMs));
          continue;
        }
        queue.splice(0, batch.length);
        const now = performance.now();
        for (const entry of batch) lagsMs.push(now - entry.observedAt);
        if (lagsMs.length > MAX_LAGS_KEPT) lagsMs.splice(0, lagsMs.length - MAX_LAGS_KEPT);
        delivered += batch.length;
      }
    } finally {
      delivering = false;
    }
    if (queue.length > 0) schedule();
    else {
      for (const resolve of idle) resolve();
      idle = [];
    }
  };

  const port = await listen(server, options.port ?? 0, options.host ?? '127.0.0.1');

  return {
    endpoint: `http://${options.host ?? '127.0.0.1'}:${port}`,
    port,
    drain: () =>
      queue.length === 0 && !delivering ? Promise.resolve() : new Promise<void>((resolve) => idle.push(resolve)),
    stats: () => ({ delivered, lagsMs: [...lagsMs] }),
    close: async () => {
      closed = true;
      if (timer) clearTimeout(timer);
      for (const resolve of idle) resolve();
      reader.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
};

export interface UsageChangeFeedOptions extends Pick<ChangeFeedOptions, 'port' | 'host' | 'onError'> {
  /** The DynamoDB holding the tables. */
  target: string;
  /** The usage table's name. */
  usageTable: string;
}

type StreamHandler = (event: DynamoDBStreamEvent, context: Context) => Promise<DynamoDBBatchResponse>;

/**
 * The change feed of the usage table, delivering to the deployed aggregator function itself,
 * invoked as Lambda would. Its module is loaded at the first delivery, when the environment
 * (ROLLUPS_TABLE, DYNAMODB_ENDPOINT) is set, as Lambda loads it with the function's configuration.
 */
export const startUsageChangeFeed = async (options: UsageChangeFeedOptions): Promise<ChangeFeed> => {
  let aggregator: Promise<StreamHandler> | undefined;
  return startChangeFeed({
    target: options.target,
    tableName: options.usageTable,
    keyAttributes: [usageTable.partitionKey.name, usageTable.sortKey!.name],
    handler: async (event) => {
      aggregator ??= import(join(PROJECT_ROOT, AGGREGATOR_ENTRY)).then((m: { handler: StreamHandler }) => m.handler);
      return invokeFunction(await aggregator, event, buildContext('branch-api-aggregate-usage'));
    },
    ...(options.port !== undefined ? { port: options.port } : {}),
    ...(options.host !== undefined ? { host: options.host } : {}),
    ...(options.onError ? { onError: options.onError } : {}),
  });
};
