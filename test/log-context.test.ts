/**
 * Every line a request logs carries that request's fields: the Lambda context's (function name,
 * its request id, cold start) and ours (`request_id`, `route`), and a later request's lines carry
 * the later request's, never the earlier one's (shared/api/middlewares/request-context.ts).
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { ApiLogger } from '../shared/lambda/api-logger';
import { buildContext, buildEvent } from '../lib/local/events';
import type { ApiContext } from '../shared/api/middlewares';
import { RequestLogFormatter } from '../shared/lambda/request-log-formatter';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { invokeFunction } from '../lib/local/invoke';
import { createMiddlewareChain } from '../shared/api/middleware-chain';
import {
  FAST_FAILURE_ENV,
  captureLogs,
  closedPortEndpoint,
  loadService,
  setUpBranches,
  type Service,
} from './support/harness';

let service: Service;
let key: string;

beforeAll(async () => {
  ({ key } = await setUpBranches());
  // Every call fails fast, so every request logs its 503 ("Request failed").
  service = await loadService({ ...FAST_FAILURE_ENV, DYNAMODB_ENDPOINT: await closedPortEndpoint() });
});

const failedRequest = async (path: string, handler: Service['getBranch'], functionName: string) => {
  const event = buildEvent({ path, headers: { host: 'localhost', authorization: `Bearer ${key}` } });
  const context = buildContext(functionName) as ApiContext;
  const logs = captureLogs(service.logger, 'WARN');
  const res = await handler(event, context).finally(logs.restore);
  expect(res.statusCode).toBeGreaterThanOrEqual(400);
  return { lines: logs.entries, requestId: event.requestContext.requestId, awsRequestId: context.awsRequestId };
};

it("gives every line of a request the Lambda context's fields and the request's own", async () => {
  const first = await failedRequest('/v1/branch', service.getBranch, 'get-branch');
  const second = await failedRequest('/v1/members', service.listMembers, 'list-members');
  for (const [request, route, functionName] of [
    [first, 'GET /v1/branch', 'get-branch'],
    [second, 'GET /v1/members', 'list-members'],
  ] as const) {
    expect(request.lines.length).toBeGreaterThan(0);
    for (const line of request.lines) {
      expect(line).toMatchObject({
        request_id: request.requestId,
        route,
        function_name: functionName,
        function_request_id: request.awsRequestId,
        function_arn: `arn:aws:lambda:local:000000000000:function:${functionName}`,
        function_memory_size: '256',
        cold_start: expect.any(Boolean),
        service: expect.any(String),
      });
    }
  }
});

/** The JSON line each logger writes for the same call, in the same Lambda context. */
const lineOf = (logger: Logger, write: (logger: Logger) => void): Record<string, unknown> => {
  const logs = captureLogs(logger, 'INFO');
  try {
    write(logger);
  } finally {
    logs.restore();
  }
  expect(logs.entries).toHaveLength(1);
  return logs.entries[0]!;
};

describe('the log format (shared/lambda/request-log-formatter.ts)', () => {
  const context = buildContext('get-branch');
  const loggers = () => {
    const fields = new RequestLogFormatter();
    const ours = new Logger({ serviceName: 'format-test', logLevel: 'INFO', logFormatter: fields });
    const powertools = new Logger({ serviceName: 'format-test', logLevel: 'INFO' });
    for (const one of [ours, powertools]) one.addContext(context);
    return { fields, ours, powertools };
  };
  const error = new Error('boom');
  const write = (logger: Logger) => logger.info('Request failed', { status: 503, error });
  const withoutTime = ({ timestamp, ...rest }: Record<string, unknown>) => {
    expect(timestamp).toEqual(expect.stringMatching(/^\d{4}-\d\d-\d\dT/));
    return rest;
  };

  it("is Powertools' own, key for key and in the same order, plus the request's two fields", () => {
    const { fields, ours, powertools } = loggers();
    fields.setRequest(context.awsRequestId, { request_id: 'req-1', route: 'GET /v1/branch' });
    const expected = withoutTime(lineOf(powertools, write));
    const actual = withoutTime(lineOf(ours, write));
    const { request_id, route, ...rest } = actual;
    expect({ request_id, route }).toEqual({ request_id: 'req-1', route: 'GET /v1/branch' });
    expect(rest).toEqual(expected);
    expect(Object.keys(rest)).toEqual(Object.keys(expected));
  });

  it("puts no request's fields on a line of another invocation (the aggregator's, in one process locally)", () => {
    const { fields, ours } = loggers();
    fields.setRequest('another-invocation', { request_id: 'req-2', route: 'GET /v1/members' });
    const line = lineOf(ours, write);
    expect(line).not.toHaveProperty('request_id');
    expect(line).not.toHaveProperty('route');
    expect(line).toMatchObject({ function_request_id: context.awsRequestId, function_name: 'get-branch' });
  });

  it('puts the latest request on lines of its own context, one request at a time (standard Lambda)', () => {
    const { fields, ours } = loggers();
    fields.setRequest(context.awsRequestId, { request_id: 'req-1', route: 'GET /v1/branch' });
    fields.setRequest(context.awsRequestId, { request_id: 'req-2', route: 'GET /v1/members' });
    expect(lineOf(ours, write)).toMatchObject({ request_id: 'req-2', route: 'GET /v1/members' });
  });
});

/**
 * A chain whose handler logs one line; a request to /v1/branch logs it only once released, so a
 * test decides what begins and ends in between.
 */
const heldChain = () => {
  const logFields = new RequestLogFormatter();
  const logger = new ApiLogger({ serviceName: 'concurrency-test', logLevel: 'INFO', logFormatter: logFields });
  const metrics = new Metrics({ namespace: 'ConcurrencyTest', serviceName: 'concurrency-test' });
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const handler = createMiddlewareChain(
    async (event) => {
      if (event.rawPath === '/api/v1/branch') await released;
      logger.info('inside the handler');
      if (event.rawPath === '/api/v1/members') release();
      return { statusCode: 200, headers: {}, body: '{}' };
    },
    { logger, logFields, metrics },
  );
  return { logger, handler, release };
};

it('keeps each of two concurrent invocations in one environment to its own fields (lib/local/invoke.ts)', async () => {
  // The first request logs only after the second has started and logged.
  const { logger, handler } = heldChain();
  const events = [buildEvent({ path: '/v1/branch' }), buildEvent({ path: '/v1/members' })];
  const contexts = events.map(() => buildContext() as ApiContext);
  const logs = captureLogs(logger, 'INFO');
  try {
    await Promise.all(events.map((event, at) => invokeFunction(handler, event, contexts[at]!)));
  } finally {
    logs.restore();
  }
  const { entries } = logs;
  expect(entries.map((entry) => entry.function_request_id)).toEqual([
    contexts[1]!.awsRequestId,
    contexts[0]!.awsRequestId,
  ]);
  for (const [at, event] of events.entries()) {
    expect(entries.find((entry) => entry.function_request_id === contexts[at]!.awsRequestId)).toMatchObject({
      request_id: event.requestContext.requestId,
      route: event.routeKey,
    });
  }
});

it('keeps a slow request to its own fields however many requests begin and end during it (lib/local/invoke.ts)', async () => {
  // The slow one logs only after 600 others have come and gone.
  const { logger, handler, release } = heldChain();
  const slow = buildEvent({ path: '/v1/branch' });
  const slowContext = buildContext() as ApiContext;
  const logs = captureLogs(logger, 'INFO');
  try {
    const slowDone = invokeFunction(handler, slow, slowContext);
    for (let batch = 0; batch < 6; batch += 1) {
      await Promise.all(
        Array.from({ length: 100 }, () =>
          invokeFunction(handler, buildEvent({ path: '/v1/payment-providers' }), buildContext() as ApiContext),
        ),
      );
    }
    release();
    await slowDone;
  } finally {
    logs.restore();
  }
  expect(logs.entries).toHaveLength(601);
  expect(logs.entries.at(-1)).toMatchObject({
    function_request_id: slowContext.awsRequestId,
    request_id: slow.requestContext.requestId,
    route: slow.routeKey,
  });
});
