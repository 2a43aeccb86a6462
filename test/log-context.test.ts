/**
 * Every line a request logs carries that request's fields: the Lambda context's (function name,
 * its request id, cold start) and ours (`request_id`, `route`), and a later request's lines carry
 * the later request's, never the earlier one's (shared/api/middleware-chain.ts). Concurrent
 * invocations run in the invocation store (lib/local/invoke.ts), where Powertools keeps keys apart.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { buildContext, buildEvent } from '../lib/local/events';
import type { ApiContext } from '../shared/api/middlewares';
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

/**
 * A chain whose handler logs one line; a request to /v1/branch logs it only once released, so a
 * test decides what begins and ends in between.
 */
const heldChain = () => {
  const logger = new Logger({ serviceName: 'concurrency-test', logLevel: 'INFO' });
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
    { logger, metrics },
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

it("puts no request's fields on a line of another invocation beside it, or on a line after it", async () => {
  // The other invocation stands for the usage aggregator, which runs in the same process under `npm start`.
  const { logger, handler, release } = heldChain();
  const logs = captureLogs(logger, 'INFO');
  try {
    const held = invokeFunction(handler, buildEvent({ path: '/v1/branch' }), buildContext() as ApiContext);
    const other = buildContext();
    await invokeFunction(async () => logger.info('another invocation'), {}, other);
    release();
    await held;
    logger.info('after the request');
  } finally {
    logs.restore();
  }
  for (const message of ['another invocation', 'after the request']) {
    const line = logs.entries.find((entry) => entry.message === message);
    expect(line).toBeDefined();
    expect(line).not.toHaveProperty('request_id');
    expect(line).not.toHaveProperty('route');
  }
});
