/**
 * A DynamoDB endpoint for one function: it forwards every call to the embedded DynamoDB and
 * records what was asked (action, table, index), which is exactly what IAM will be asked to allow.
 * It can also refuse writes, to drive the paths that run when a write fails.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { forwardRequest } from '../local/forward';
import type { Json } from './assembly';

export interface DynamoOperation {
  /** e.g. `dynamodb:Query`. */
  action: string;
  table: string;
  index?: string;
}

/** Items written, for a table's stream: the new image of each PutItem (and BatchWriteItem put). */
export interface CapturedWrite {
  table: string;
  item: Record<string, unknown>;
}

const WRITE_ACTIONS = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem', 'TransactWriteItems']);

/** The tables (and index) one DynamoDB request names. */
const operationsOf = (action: string, body: Json): DynamoOperation[] => {
  const name = `dynamodb:${action}`;
  if (typeof body.TableName === 'string') {
    return [{ action: name, table: body.TableName, ...(body.IndexName ? { index: String(body.IndexName) } : {}) }];
  }
  if (body.RequestItems && typeof body.RequestItems === 'object') {
    return Object.keys(body.RequestItems).map((table) => ({ action: name, table }));
  }
  if (Array.isArray(body.TransactItems)) {
    return body.TransactItems.flatMap((entry: Json) =>
      Object.values(entry).map((operation: Json) => ({ action: name, table: String(operation?.TableName) })),
    );
  }
  return [{ action: name, table: '*' }];
};

const writesOf = (action: string, body: Json): CapturedWrite[] => {
  if (action === 'PutItem') return [{ table: body.TableName, item: body.Item }];
  if (action === 'BatchWriteItem') {
    return Object.entries<Json[]>(body.RequestItems ?? {}).flatMap(([table, requests]) =>
      requests.filter((entry) => entry.PutRequest).map((entry) => ({ table, item: entry.PutRequest.Item })),
    );
  }
  return [];
};

export interface RecordingProxy {
  endpoint: string;
  operations: DynamoOperation[];
  writes: CapturedWrite[];
  /** While true, every write is answered with a ValidationException (not retried by the SDK). */
  failWrites: boolean;
  close(): Promise<void>;
}

const readBody = async (request: IncomingMessage): Promise<Buffer> => {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
};

export const startRecordingProxy = async (upstream: string): Promise<RecordingProxy> => {
  const target = new URL(upstream);
  const proxy: RecordingProxy = {
    endpoint: '',
    operations: [],
    writes: [],
    failWrites: false,
    close: async () => undefined,
  };
  const server: Server = createServer(async (request, response) => {
    const body = await readBody(request);
    const action = String(request.headers['x-amz-target'] ?? '').split('.')[1] ?? 'Unknown';
    let parsed: Json = {};
    try {
      parsed = JSON.parse(body.toString('utf8') || '{}');
    } catch {
      // Recorded as an unknown table.
    }
    proxy.operations.push(...operationsOf(action, parsed));
    if (proxy.failWrites && WRITE_ACTIONS.has(action)) {
      response.writeHead(400, { 'Content-Type': 'application/x-amz-json-1.0' });
      response.end(JSON.stringify({ __type: 'com.amazon.coral.validate#ValidationException', message: 'Injected' }));
      return;
    }
    forwardRequest(target, request, response, body, (status) => {
      if (status < 300) proxy.writes.push(...writesOf(action, parsed));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  proxy.endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  proxy.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return proxy;
};
