/**
 * A DynamoDB endpoint for one function: it forwards every call to the embedded DynamoDB and
 * records what was asked (action, table, index), which is exactly what IAM will be asked to allow.
 * It can also refuse writes, to drive the paths that run when a write fails.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { forwardRequest, readBody } from '../local/forward';
import { LOCAL_ACCOUNT, LOCAL_REGION, type Json } from './assembly';

export interface DynamoOperation {
  /** e.g. `dynamodb:Query`. */
  action: string;
  table: string;
  index?: string;
}

/** One item changed in a streamed table, as its stream would show it (DynamoDB JSON images). */
export interface CapturedWrite {
  table: string;
  /** When the request arrived (process clock): orders the changes of every function. */
  at: bigint;
  keys: Record<string, unknown>;
  oldImage?: Record<string, unknown>;
  newImage?: Record<string, unknown>;
}

/** The items one write request touches in the streamed tables (table name → key attribute names). */
const touchedBy = (
  action: string,
  body: Json,
  streamed: ReadonlyMap<string, readonly string[]>,
): { table: string; key: Record<string, unknown> }[] => {
  const pick = (table: string, item: Json | undefined) =>
    Object.fromEntries((streamed.get(table) ?? []).map((name) => [name, item?.[name]]));
  const one = (table: string, operation: Json | undefined) =>
    operation?.Item ? pick(table, operation.Item) : ((operation?.Key ?? {}) as Record<string, unknown>);
  let touched: { table: string; key: Record<string, unknown> }[] = [];
  if (action === 'PutItem' || action === 'UpdateItem' || action === 'DeleteItem') {
    touched = [{ table: String(body.TableName), key: one(String(body.TableName), body) }];
  } else if (action === 'BatchWriteItem') {
    touched = Object.entries<Json[]>(body.RequestItems ?? {}).flatMap(([table, requests]) =>
      requests.map((entry) => ({ table, key: one(table, entry.PutRequest ?? entry.DeleteRequest) })),
    );
  } else if (action === 'TransactWriteItems') {
    touched = asArray(body.TransactItems).flatMap((entry: Json) =>
      Object.values<Json>(entry)
        .filter((operation) => operation?.TableName && (operation.Item || operation.Key))
        .map((operation) => ({ table: String(operation.TableName), key: one(String(operation.TableName), operation) })),
    );
  }
  return touched.filter((item) => streamed.has(item.table));
};

const asArray = (value: unknown): Json[] => (Array.isArray(value) ? (value as Json[]) : []);

const WRITE_ACTIONS = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem', 'TransactWriteItems']);

/** The ARN IAM checks for one operation: the table's, or its index's. */
export const arnOf = (operation: DynamoOperation): string =>
  `arn:aws:dynamodb:${LOCAL_REGION}:${LOCAL_ACCOUNT}:table/${operation.table}${operation.index ? `/index/${operation.index}` : ''}`;

/** What IAM checks for each item of a transaction: the item's own action (a Put is dynamodb:PutItem). */
const TRANSACT_ITEM_ACTIONS: Record<string, string> = {
  Put: 'dynamodb:PutItem',
  Update: 'dynamodb:UpdateItem',
  Delete: 'dynamodb:DeleteItem',
  ConditionCheck: 'dynamodb:ConditionCheckItem',
  Get: 'dynamodb:GetItem',
};

/** The actions IAM is asked to allow for one DynamoDB request, each with its table (and index). */
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
      Object.entries<Json>(entry).map(([kind, operation]) => ({
        action: TRANSACT_ITEM_ACTIONS[kind] ?? name,
        table: String(operation?.TableName),
      })),
    );
  }
  return [{ action: name, table: '*' }];
};

export interface RecordingProxy {
  endpoint: string;
  operations: DynamoOperation[];
  /** Operations the policy (`allows`) refused, answered with AccessDeniedException. */
  denied: DynamoOperation[];
  writes: CapturedWrite[];
  /**
   * While true, every write is throttled (ProvisionedThroughputExceededException, the fault the
   * throttle alarms watch for): the SDK retries it, then the code's own failure path runs.
   */
  failWrites: boolean;
  /** Resolves once every change made so far is in `writes`. */
  settled(): Promise<void>;
  close(): Promise<void>;
}

type Item = Record<string, unknown>;
type Touched = { table: string; key: Item };

/** The answer DynamoDB gives a throttled write (the fault the throttle alarms watch for). */
const refuseWrite = (response: ServerResponse) => {
  response.writeHead(400, { 'Content-Type': 'application/x-amz-json-1.0' });
  response.end(
    JSON.stringify({
      __type: 'com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException',
      message: 'Injected by verify:assembly',
    }),
  );
};

/**
 * What DynamoDB answers a request its caller's policy does not allow (the SDK reads the name after
 * `#`): the first refused operation, worded as IAM words it.
 */
const denyRequest = (response: ServerResponse, operation: DynamoOperation, arn: string) => {
  response.writeHead(400, { 'Content-Type': 'application/x-amz-json-1.0' });
  response.end(
    JSON.stringify({
      __type: 'com.amazon.coral.service#AccessDeniedException',
      Message: accessDeniedMessage(operation.action, arn),
    }),
  );
};

/** The principal the verifier's stand-ins answer for (STS GetCallerIdentity, denials). */
export const VERIFY_PRINCIPAL = `arn:aws:sts::${LOCAL_ACCOUNT}:assumed-role/verify-operator/verify`;

/** A denial, worded as IAM words it. */
export const accessDeniedMessage = (action: string, arn: string): string =>
  `User: ${VERIFY_PRINCIPAL} is not authorized to perform: ${action} on resource: ${arn} because no identity-based policy allows the ${action} action`;

/** The action (`Query`, …) and parsed body of one DynamoDB request. */
const parseRequest = (request: IncomingMessage, body: Buffer): { action: string; parsed: Json } => {
  const action = String(request.headers['x-amz-target'] ?? '').split('.')[1] ?? 'Unknown';
  try {
    return { action, parsed: JSON.parse(body.toString('utf8') || '{}') as Json };
  } catch {
    // Recorded as an unknown table.
    return { action, parsed: {} };
  }
};

/** Work still in flight, awaited by `settled()`: stream image captures and requests being handled. */
const pendingWork = () => {
  const pending = new Set<Promise<unknown>>();
  return {
    track: (work: Promise<unknown>) => {
      // Never rejects: a failure here is a request the function sees fail, not a crash of the run.
      const settled = work.then(
        () => undefined,
        () => undefined,
      );
      pending.add(settled);
      void settled.then(() => pending.delete(settled));
    },
    settled: async () => {
      while (pending.size > 0) await Promise.all(pending);
    },
  };
};

/** Reads the images straight from the embedded DynamoDB: not recorded, not the function's call. */
const imageReader = (upstream: string) => {
  const reader = new DynamoDBClient({
    endpoint: upstream,
    region: LOCAL_REGION,
    credentials: { accessKeyId: 'verify', secretAccessKey: 'verify' },
  });
  const imageOf = async (table: string, key: Item) =>
    (await reader.send(new GetItemCommand({ TableName: table, Key: key as never, ConsistentRead: true }))).Item as
      Item | undefined;
  return { imageOf, destroy: () => reader.destroy() };
};

/** Records the changes a successful write made: each touched item's image before and after it. */
const captureChanges = async (
  writes: CapturedWrite[],
  imageOf: (table: string, key: Item) => Promise<Item | undefined>,
  change: { touched: Touched[]; before: (Item | undefined)[]; at: bigint },
) => {
  const after = await Promise.all(change.touched.map((item) => imageOf(item.table, item.key)));
  change.touched.forEach((item, i) => {
    const [oldImage, newImage] = [change.before[i], after[i]];
    // DynamoDB writes no stream record for a write that changed nothing.
    if (JSON.stringify(oldImage) === JSON.stringify(newImage)) return;
    writes.push({
      table: item.table,
      at: change.at,
      keys: item.key,
      ...(oldImage ? { oldImage } : {}),
      ...(newImage ? { newImage } : {}),
    });
  });
};

/**
 * @param streamed tables that have a stream, with their key attribute names: each change to them
 * is captured with its old and new image, read around the write (calls are sequential here).
 * @param allows when given, a policy: a request with an operation it refuses is answered
 * AccessDeniedException, as DynamoDB answers one its caller's IAM policy does not allow.
 */
export const startRecordingProxy = async (
  upstream: string,
  streamed: ReadonlyMap<string, readonly string[]> = new Map(),
  allows?: (action: string, arn: string) => boolean,
): Promise<RecordingProxy> => {
  const target = new URL(upstream);
  const { imageOf, destroy } = imageReader(upstream);
  const { track, settled } = pendingWork();
  const proxy: RecordingProxy = {
    endpoint: '',
    operations: [],
    denied: [],
    writes: [],
    failWrites: false,
    settled,
    close: async () => undefined,
  };
  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const body = await readBody(request);
    const { action, parsed } = parseRequest(request, body);
    const operations = operationsOf(action, parsed);
    proxy.operations.push(...operations);
    const refused = allows && operations.find((operation) => !allows(operation.action, arnOf(operation)));
    if (refused) {
      proxy.denied.push(refused);
      return denyRequest(response, refused, arnOf(refused));
    }
    if (proxy.failWrites && WRITE_ACTIONS.has(action)) return refuseWrite(response);
    const at = process.hrtime.bigint();
    const touched = touchedBy(action, parsed, streamed);
    const before = await Promise.all(touched.map((item) => imageOf(item.table, item.key)));
    const captured = (status: number) => {
      if (status < 300 && touched.length > 0) track(captureChanges(proxy.writes, imageOf, { touched, before, at }));
    };
    await new Promise<void>((resolve) => forwardRequest(target, request, response, body, captured, resolve));
  };
  const server: Server = createServer((request, response) => {
    track(
      handle(request, response).catch(() => {
        if (!response.headersSent) response.writeHead(500);
        response.end();
      }),
    );
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  proxy.endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // Every request handled and every image read before the reader goes: nothing is left in flight
  // when the embedded DynamoDB closes after this (a call landing on a closed database crashed runs).
  proxy.close = async () => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    await proxy.settled();
    server.closeAllConnections();
    await closed;
    destroy();
  };
  return proxy;
};
