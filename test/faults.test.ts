/**
 * DynamoDB faults through the real SDK: a database that refuses connections, throttles, fails,
 * stalls, drops connections, or goes away and comes back (test/support/fault-proxy.ts). Each
 * configuration runs in its own module registry (a container) with the DYNAMODB_* timeouts lowered
 * so a fault surfaces within a few seconds; one case keeps the defaults to show their bound.
 */
import { buildContext, buildEvent } from '../lib/local/events';
import type { ApiContext } from '../shared/api/middlewares';
import { startFaultProxy, type FaultProxy } from './support/fault-proxy';
import {
  FAST_FAILURE_ENV,
  captureLogs,
  closedPortEndpoint,
  expectError,
  headerOf,
  invoke,
  loadService,
  usageRecordFor,
  type InvokeResult,
  type Service,
  setUpBranches,
} from './support/harness';

let key: string;
let proxy: FaultProxy;

beforeAll(async () => {
  ({ key } = await setUpBranches());
  proxy = await startFaultProxy(process.env.DYNAMODB_ENDPOINT!);
});

afterAll(() => proxy.close());

beforeEach(() => {
  proxy.clear();
  proxy.resetLog();
});

const containers = new Map<string, Promise<Service>>();
/**
 * A container talking to the database through the proxy: one per configuration, reused across
 * tests as a warm Lambda container is (the SDK's retry quota is far from spent by these tests).
 */
/** The deployed settings: without the roomier bound the other tests get (test/support/env.ts). */
const DEPLOYED_DEFAULTS = { DYNAMODB_DEADLINE_MS: undefined };

const behindProxy = (env: Record<string, string | undefined> = FAST_FAILURE_ENV): Promise<Service> => {
  const id = JSON.stringify(env);
  if (!containers.has(id)) containers.set(id, loadService({ ...env, DYNAMODB_ENDPOINT: proxy.endpoint }));
  return containers.get(id)!;
};

const members = (service: Service) => invoke(service.listMembers, { path: '/v1/members', key });

const expect503 = (res: InvokeResult) => {
  expectError(res, 503, 'service_unavailable');
  expect(headerOf(res, 'retry-after')).toBe('1');
};

describe('the database refuses connections', () => {
  it('is a 503 with Retry-After', async () => {
    const service = await loadService({ ...FAST_FAILURE_ENV, DYNAMODB_ENDPOINT: await closedPortEndpoint() });
    const res = await members(service);
    expect503(res);
  });

  it('is a 503 with the default settings too: two attempts within a 2 s deadline', async () => {
    const service = await loadService({ ...DEPLOYED_DEFAULTS, DYNAMODB_ENDPOINT: await closedPortEndpoint() });
    expect(service.runtime.config.dynamodb).toMatchObject({ maxAttempts: 2, deadlineMs: 2000 });
    const res = await members(service);
    expect503(res);
  });
});

describe('throttling', () => {
  it('a throttled key lookup is a 503, the SDK having seen ProvisionedThroughputExceededException', async () => {
    const service = await behindProxy({ ...FAST_FAILURE_ENV, DYNAMODB_MAX_ATTEMPTS: '1' });
    proxy.inject('GetItem', { kind: 'throttle' });
    const logs = captureLogs(service.logger, 'WARN');
    const res = await members(service).finally(logs.restore);
    expect503(res);
    expect(proxy.requests).toEqual([{ operation: 'GetItem', outcome: 'throttle' }]);
    const failure = logs.entries.find((entry) => entry.message === 'Request failed');
    expect(failure).toMatchObject({ level: 'WARN', error: { name: 'DataStoreUnavailableError' } });
    expect(failure?.error.cause.name).toBe('ProvisionedThroughputExceededException');
  });

  it('throttling that lasts is a 503 within the deadline, retries included', async () => {
    const service = await behindProxy();
    proxy.inject('Query', { kind: 'throttle' });
    const res = await members(service);
    expect503(res);
    // Two attempts, then the 503: counted at the proxy, not timed (a busy machine is slow, not wrong).
    expect(proxy.operations().filter((op) => op === 'Query')).toHaveLength(2);
  });
});

describe('server errors and dropped connections', () => {
  it('a DynamoDB 500 on every attempt is a 503 after the SDK retried', async () => {
    const service = await behindProxy();
    proxy.inject('Query', { kind: 'error' });
    expect503(await members(service));
    expect(proxy.requests.filter((r) => r.operation === 'Query')).toEqual([
      { operation: 'Query', outcome: 'error' },
      { operation: 'Query', outcome: 'error' },
    ]);
  });

  it('a single 500 is retried and the caller never sees it', async () => {
    const service = await behindProxy();
    proxy.inject('Query', { kind: 'error' }, 1);
    const res = await members(service);
    expect(res.statusCode).toBe(200);
    expect(res.json.data).toHaveLength(23);
    // The rate-limit counter's UpdateItem runs alongside the read, so only the Query order is fixed.
    expect(proxy.operations().filter((op) => op !== 'UpdateItem')).toEqual(['GetItem', 'Query', 'Query', 'PutItem']);
    expect(proxy.operations().filter((op) => op === 'UpdateItem')).toHaveLength(1);
  });

  it('a connection dropped on every attempt is a 503; dropped once, it is retried', async () => {
    const service = await behindProxy();
    proxy.inject('GetItem', { kind: 'reset' });
    expect503(await members(service));
    proxy.clear();
    proxy.inject('GetItem', { kind: 'reset' }, 1);
    expect((await members(service)).statusCode).toBe(200);
  });
});

describe('a stalled database', () => {
  it('each attempt ends at DYNAMODB_REQUEST_TIMEOUT_MS', async () => {
    // One attempt of 300 ms under a 5 s bound: without throwOnRequestTimeout the SDK only
    // logged a warning at 300 ms and went on waiting.
    const service = await behindProxy({
      DYNAMODB_REQUEST_TIMEOUT_MS: '300',
      DYNAMODB_MAX_ATTEMPTS: '1',
      DYNAMODB_DEADLINE_MS: '5000',
    });
    proxy.inject('Query', { kind: 'stall' });
    const res = await members(service);
    expect503(res);
    // The attempt ended by its own timeout: a stall nobody ends would time this test out instead.
    expect(proxy.requests.filter((r) => r.operation === 'Query')).toEqual([{ operation: 'Query', outcome: 'stall' }]);
  });

  it('a stall once is retried and answered', async () => {
    const service = await behindProxy();
    proxy.inject('Query', { kind: 'stall' }, 1);
    const res = await members(service);
    expect(res.statusCode).toBe(200);
    expect(proxy.requests.filter((r) => r.operation === 'Query').map((r) => r.outcome)).toEqual(['stall', 'forwarded']);
  });

  it('with the default settings a stall is a 503 after two attempts', async () => {
    const service = await behindProxy(DEPLOYED_DEFAULTS);
    proxy.inject('GetItem', { kind: 'stall' });
    const res = await members(service);
    expect503(res);
    expect(proxy.requests).toEqual([
      { operation: 'GetItem', outcome: 'stall' },
      { operation: 'GetItem', outcome: 'stall' },
    ]);
  });

  it('a stalled usage write: answered within the bound, logged for replay, and never written afterwards', async () => {
    const service = await behindProxy({});
    const { deadlineMs, maxAttempts } = service.runtime.config.dynamodb;
    proxy.inject('PutItem', { kind: 'stall' });
    const logs = captureLogs(service.logger, 'ERROR');
    const res = await members(service).finally(logs.restore);
    expect(res.statusCode).toBe(200);
    const logged = logs.entries.find((entry) => entry.message === 'Usage record not stored');
    expect(logged?.usage_record).toMatchObject({ request_id: res.requestId, status: 200 });
    // From now on a PutItem would be stored: an attempt still going on in the background (the
    // earlier timer race) would show here. Waiting one more bound covers any retry it could make.
    proxy.clear();
    await new Promise((resolve) => setTimeout(resolve, deadlineMs));
    expect(proxy.requests.filter((r) => r.operation === 'PutItem')).toEqual(
      Array.from({ length: maxAttempts }, () => ({ operation: 'PutItem', outcome: 'stall' })),
    );
    expect(await usageRecordFor(res.requestId)).toBeUndefined();
  });

  it('an endpoint has no early timeout: its bounded calls answer, even when the context says time is nearly up', async () => {
    // Middy's default would answer a TimeoutError 5 ms before getRemainingTimeInMillis runs out;
    // the endpoints turn it off (docs/decisions.md "Deadlines and timeouts").
    const service = await behindProxy();
    proxy.inject('Query', { kind: 'delay', ms: 60 });
    const event = buildEvent({ path: '/v1/members', headers: { host: 'localhost', authorization: `Bearer ${key}` } });
    const context = { ...buildContext(), getRemainingTimeInMillis: () => 20 } as ApiContext;
    const res = await service.listMembers(event, context);
    expect(res.statusCode).toBe(200);
    expect(JSON.parse(res.body).data).toHaveLength(23);
  });

  it('a slow but answering database is not an error', async () => {
    const service = await behindProxy();
    proxy.inject('Query', { kind: 'delay', ms: 60 });
    expect((await members(service)).statusCode).toBe(200);
  });
});

describe('the database goes away and comes back', () => {
  it('answers 503 while it is away and 200 once it is back, in the same container', async () => {
    const service = await behindProxy();
    expect((await members(service)).statusCode).toBe(200);
    await proxy.stop();
    expect503(await members(service));
    expect503(await invoke(service.getBranch, { path: '/v1/branch', key }));
    await proxy.start();
    const back = await members(service);
    expect(back.statusCode).toBe(200);
    expect(await usageRecordFor(back.requestId)).toMatchObject({ status: 200 });
  });
});

describe('a fault after the key was found', () => {
  it('is a 503 that is still recorded against the key', async () => {
    const service = await behindProxy();
    proxy.inject('Query', { kind: 'error' });
    const res = await members(service);
    expect503(res);
    expect(await usageRecordFor(res.requestId)).toMatchObject({ status: 503, route: 'GET /v1/members' });
  });
});
