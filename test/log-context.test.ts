/**
 * Every line a request logs carries that request's fields: the Lambda context's (function name,
 * its request id, cold start) and ours (`request_id`, `route`), and a later request's lines carry
 * the later request's, never the earlier one's (shared/api/middlewares/request-context.ts).
 */
import { buildContext, buildEvent } from '../lib/local/events';
import type { ApiContext } from '../shared/api/middlewares';
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
