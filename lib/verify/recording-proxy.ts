/**
 * A DynamoDB endpoint for one function: it forwards every call to the embedded DynamoDB and
 * records what was asked (action, table, index), which is exactly what IAM will be asked to allow.
 * It can also refuse writes, to drive the paths that run when a write fails.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startChangeCapture, type CapturedChange } from '../local/change-capture';
import { forwardRequest, readBody } from '../local/forward';
import { LOCAL_ACCOUNT, LOCAL_REGION, type Json } from './assembly';

export interface DynamoOperation {
  /** e.g. `dynamodb:Query`. */
  action: string;
  table: string;
  index?: string;
}

/** One item changed in a streamed table, and when its request arrived (orders the changes of every function). */
export type CapturedWrite = CapturedChange & { at: bigint };

const WRITE_ACTIONS = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem']);

/** The ARN IAM checks for one operation: the table's, or its index's. */
export const arnOf = (operation: DynamoOperation): string =>
  `arn:aws:dynamodb:${LOCAL_REGION}:${LOCAL_ACCOUNT}:table/${operation.table}${operation.index ? `/index/${operation.index}` : ''}`;

/** The actions IAM is asked to allow for one DynamoDB request, each with its table (and index). */
const operationsOf = (action: string, body: Json): DynamoOperation[] => {
  const name = `dynamodb:${action}`;
  if (typeof body.TableName === 'string') {
    return [{ action: name, table: body.TableName, ...(body.IndexName ? { index: String(body.IndexName) } : {}) }];
  }
  if (body.RequestItems && typeof body.RequestItems === 'object') {
    return Object.keys(body.RequestItems).map((table) => ({ action: name, table }));
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

/** Requests still being handled, awaited by `settled()`. */
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

/**
 * @param streamed tables that have a stream, with their key attribute names: each change to them
 * is captured with its old and new image (lib/local/change-capture.ts).
 * @param allows when given, a policy: a request with an operation it refuses is answered
 * AccessDeniedException, as DynamoDB answers one its caller's IAM policy does not allow.
 */
export const startRecordingProxy = async (
  upstream: string,
  streamed: ReadonlyMap<string, readonly string[]> = new Map(),
  allows?: (action: string, arn: string) => boolean,
): Promise<RecordingProxy> => {
  const target = new URL(upstream);
  const capture = startChangeCapture(upstream, streamed);
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
    if (capture.touches(action, parsed)) {
      const answer = await capture.write(request, body, action, parsed, (changes) =>
        proxy.writes.push(...changes.map((change) => ({ ...change, at }))),
      );
      response.writeHead(answer.statusCode, answer.headers);
      return void response.end(answer.body);
    }
    await new Promise<void>((resolve) => forwardRequest(target, request, response, body, undefined, resolve));
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
    capture.close();
  };
  return proxy;
};
