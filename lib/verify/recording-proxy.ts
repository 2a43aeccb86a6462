/**
 * A DynamoDB endpoint for one function: it forwards every call to the embedded DynamoDB and
 * records what was asked (action, table, index), which is exactly what IAM will be asked to allow.
 * It can also refuse writes, to drive the paths that run when a write fails.
 */
import { createServer, type ServerResponse } from 'node:http';
import { operationOf, parseBody, startChangeCapture, type CapturedChange } from '../local/change-capture';
import { forwardRequest, readBody } from '../local/forward';
import { listen } from '../local/listen';
import { LOCAL_ACCOUNT, LOCAL_REGION, type Json } from './assembly';

export interface DynamoOperation {
  /** e.g. `dynamodb:Query`. */
  action: string;
  table: string;
  index?: string;
}

/** One item changed in a streamed table, and when its request arrived (orders the changes of every function). */
export type CapturedWrite = CapturedChange & { at: bigint };

export type RecordingProxy = Awaited<ReturnType<typeof startRecordingProxy>>;

const WRITE_ACTIONS = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem']);

/** The ARN IAM checks for one operation: the table's, or its index's. */
export const arnOf = (operation: DynamoOperation): string =>
  `arn:aws:dynamodb:${LOCAL_REGION}:${LOCAL_ACCOUNT}:table/${operation.table}${operation.index ? `/index/${operation.index}` : ''}`;

/** The actions IAM is asked to allow for one DynamoDB request, each with its table (and index). */
const operationsOf = (action: string, body: Json): DynamoOperation[] => {
  const name = `dynamodb:${action}`;
  if (typeof body.TableName === 'string')
    return [{ action: name, table: body.TableName, ...(body.IndexName ? { index: String(body.IndexName) } : {}) }];
  if (body.RequestItems && typeof body.RequestItems === 'object')
    return Object.keys(body.RequestItems).map((table) => ({ action: name, table }));
  return [{ action: name, table: '*' }];
};

/** The principal the verifier's stand-ins answer for (STS GetCallerIdentity, denials). */
export const VERIFY_PRINCIPAL = `arn:aws:sts::${LOCAL_ACCOUNT}:assumed-role/verify-operator/verify`;

/** A denial, worded as IAM words it. */
export const accessDeniedMessage = (action: string, arn: string): string =>
  `User: ${VERIFY_PRINCIPAL} is not authorized to perform: ${action} on resource: ${arn} because no identity-based policy allows the ${action} action`;

/** An error DynamoDB answers (the SDK reads the name after `#`). */
const answerError = (response: ServerResponse, type: string, message: Record<string, string>) =>
  response
    .writeHead(400, { 'Content-Type': 'application/x-amz-json-1.0' })
    .end(JSON.stringify({ __type: type, ...message }));

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
) => {
  const target = new URL(upstream);
  const capture = startChangeCapture(upstream, streamed);
  const proxy = {
    operations: [] as DynamoOperation[],
    /** Operations the policy (`allows`) refused, answered with AccessDeniedException. */
    denied: [] as DynamoOperation[],
    writes: [] as CapturedWrite[],
    /**
     * While true, every write is throttled (ProvisionedThroughputExceededException, the fault the
     * throttle alarms watch for): the SDK retries it, then the code's own failure path runs.
     */
    failWrites: false,
  };
  /** Requests still being handled (each never rejects: a failure is a request the function sees fail). */
  const pending = new Set<Promise<unknown>>();
  const server = createServer((request, response) => {
    const handled = (async () => {
      const body = await readBody(request);
      const action = operationOf(request) ?? 'Unknown';
      const parsed = parseBody(body);
      const operations = operationsOf(action, parsed);
      proxy.operations.push(...operations);
      const refused = allows && operations.find((operation) => !allows(operation.action, arnOf(operation)));
      if (refused) {
        proxy.denied.push(refused);
        // The first refused operation, worded as IAM words it.
        return answerError(response, 'com.amazon.coral.service#AccessDeniedException', {
          Message: accessDeniedMessage(refused.action, arnOf(refused)),
        });
      }
      if (proxy.failWrites && WRITE_ACTIONS.has(action))
        return answerError(response, 'com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException', {
          message: 'Injected by verify:assembly',
        });
      const at = process.hrtime.bigint();
      if (capture.touches(action, parsed)) {
        const answer = await capture.write(request, body, action, parsed, (changes) =>
          proxy.writes.push(...changes.map((change) => ({ ...change, at }))),
        );
        return response.writeHead(answer.statusCode, answer.headers).end(answer.body);
      }
      await new Promise<void>((resolve) => forwardRequest(target, request, response, body, resolve));
    })().catch(() => {
      if (!response.headersSent) response.writeHead(500);
      response.end();
    });
    pending.add(handled);
    void handled.then(() => pending.delete(handled));
  });
  const port = await listen(server, 0, '127.0.0.1');
  /** Resolves once every change made so far is in `writes`. */
  const settled = async () => {
    while (pending.size > 0) await Promise.all(pending);
  };
  return Object.assign(proxy, {
    endpoint: `http://127.0.0.1:${port}`,
    settled,
    // Every request handled and every image read before the reader goes: nothing is left in flight
    // when the embedded DynamoDB closes after this (a call landing on a closed database crashed runs).
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      await settled();
      server.closeAllConnections();
      await closed;
      capture.close();
    },
  });
};
