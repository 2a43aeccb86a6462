/**
 * Per-key rate limits (docs/decisions.md "Rate limits") through the real functions on the embedded
 * DynamoDB: two containers (two module registries, each with its own client and memory) share one
 * counter table. Only the wall clock is faked (Date), so windows are crossed deterministically;
 * timers and I/O stay real.
 */
import { atSecondOfWindow as at, freezeClock, WINDOW_START as WINDOW } from './support/clock';
import { startFaultProxy } from './support/fault-proxy';
import {
  captureLogs,
  countCommands,
  createKey,
  expectError,
  FAST_FAILURE_ENV,
  fixtureKeys,
  headerOf,
  invoke,
  loadService,
  scanRaw,
  setUpBranches,
  tableNames,
  usageOf,
  usageRecordFor,
  type InvokeResult,
  type Service,
} from './support/harness';

let a: Service;
let b: Service;

beforeAll(async () => {
  await setUpBranches();
  // The deployment default (50/s), not the test run's (test/support/env.ts).
  [a, b] = [await loadService({ DEFAULT_RATE_LIMIT: undefined }), await loadService({ DEFAULT_RATE_LIMIT: undefined })];
});

beforeEach(() => {
  freezeClock();
  at(10);
});

afterEach(() => jest.useRealTimers());

const branch = (service: Service, key: string) => invoke(service.getBranch, { path: '/v1/branch', key });
const limitOf = (res: InvokeResult) => [headerOf(res, 'RateLimit-Policy'), headerOf(res, 'RateLimit')];

describe('the limit holds across containers sharing one DynamoDB', () => {
  it('admits exactly N calls in a window, refuses the next, and admits again in the next window', async () => {
    const { key } = await createKey({ rateLimit: '3/min' });
    const admitted = [await branch(a, key), await branch(b, key), await branch(a, key)];
    expect(admitted.map((res) => res.statusCode)).toEqual([200, 200, 200]);
    expect(admitted.map((res) => headerOf(res, 'RateLimit'))).toEqual([
      '"key";r=2;t=50',
      '"key";r=1;t=50',
      '"key";r=0;t=50',
    ]);
    for (const res of admitted) expect(headerOf(res, 'RateLimit-Policy')).toBe('"key";q=3;w=60');

    at(20);
    const refused = await branch(b, key);
    expectError(refused, 429, 'rate_limited');
    expect(headerOf(refused, 'Retry-After')).toBe('40');
    expect(limitOf(refused)).toEqual(['"key";q=3;w=60', '"key";r=0;t=40']);
    // The other container has not seen the key over its limit yet: the shared counter refuses it.
    expectError(await branch(a, key), 429, 'rate_limited');

    at(60);
    const next = [await branch(b, key), await branch(a, key)];
    expect(next.map((res) => res.statusCode)).toEqual([200, 200]);
    expect(next.map((res) => headerOf(res, 'RateLimit'))).toEqual(['"key";r=2;t=60', '"key";r=1;t=60']);
  });

  it('counts the remaining calls and the seconds to reset down', async () => {
    const { key } = await createKey({ rateLimit: '100/h' });
    const seen: (string | undefined)[] = [];
    for (const second of [0, 1, 900, 3599]) {
      at(second);
      seen.push(headerOf(await branch(second % 2 ? a : b, key), 'RateLimit'));
    }
    expect(seen).toEqual(['"key";r=99;t=3600', '"key";r=98;t=3599', '"key";r=97;t=2700', '"key";r=96;t=1']);
  });

  it('answers a key this container knows to be used up without reading data or counting', async () => {
    const { key, record } = await createKey({ rateLimit: '1/min' });
    expect((await branch(a, key)).statusCode).toBe(200);
    expectError(await branch(a, key), 429, 'rate_limited');
    const calls = countCommands(a.runtime.documentClient);
    at(59);
    const res = await branch(a, key);
    expectError(res, 429, 'rate_limited');
    expect(headerOf(res, 'Retry-After')).toBe('1');
    expect(limitOf(res)).toEqual(['"key";q=1;w=60', '"key";r=0;t=1']);
    // Key lookup and usage record only: no counter update, no branch-data read.
    expect(calls.commands).toEqual(['GetItemCommand', 'PutItemCommand']);
    const counters = await scanRaw(tableNames.rateLimits);
    const counter = counters.find((item) => item.pk?.S === `${record.key_id}#${WINDOW / 1000}`);
    // The window's only count: the one that used it up. The 429s from memory cost no write.
    expect(counter).toMatchObject({ count: { N: '1' }, expires_at_epoch: { N: String(WINDOW / 1000 + 120) } });
  });

  it('leaves a neighbouring key of the same branch alone', async () => {
    const { key: runaway } = await createKey({ rateLimit: '1/s' });
    const { key: neighbour } = await createKey();
    await branch(a, runaway);
    expectError(await branch(a, runaway), 429, 'rate_limited');
    const res = await branch(a, neighbour);
    expect(res.statusCode).toBe(200);
    // Stored without a limit: the deployment default, 50/s.
    expect(limitOf(res)).toEqual(['"key";q=50;w=1', '"key";r=49;t=1']);
  });

  it('gives keys stored without a limit the configured DEFAULT_RATE_LIMIT', async () => {
    const service = await loadService({ DEFAULT_RATE_LIMIT: '2/h' });
    const { key } = await createKey();
    expect(limitOf(await branch(service, key))).toEqual(['"key";q=2;w=3600', '"key";r=1;t=3590']);
  });
});

describe('what is counted and what a refusal looks like', () => {
  it('records every 429 in usage like any other call', async () => {
    const { key, record } = await createKey({ rateLimit: '1/s' });
    await branch(a, key);
    const fromCounter = await branch(b, key);
    const fromMemory = await branch(b, key);
    for (const res of [fromCounter, fromMemory]) {
      expectError(res, 429, 'rate_limited');
      expect(await usageRecordFor(res.requestId)).toMatchObject({
        key_id: record.key_id,
        status: 429,
        route: 'GET /v1/branch',
      });
    }
  });

  it('counts calls that end in an error, and turns them into a 429 once the limit is used up', async () => {
    const { key } = await createKey({ rateLimit: '1/min' });
    const provider = (service: Service) =>
      invoke(service.getProvider, { path: '/v1/payment-providers/pp_nope', pathParameters: { id: 'pp_nope' }, key });
    const missing = await provider(a);
    expectError(missing, 404, 'not_found');
    expect(limitOf(missing)).toEqual(['"key";q=1;w=60', '"key";r=0;t=50']);
    expectError(await provider(b), 429, 'rate_limited');
  });

  it('counts a call refused for its scope, and shows the limit on the 403', async () => {
    const { key } = await createKey({ scopes: ['write'], rateLimit: '5/min' });
    const res = await branch(a, key);
    expectError(res, 403, 'insufficient_scope');
    expect(limitOf(res)).toEqual(['"key";q=5;w=60', '"key";r=4;t=50']);
  });

  it('counts revoked and expired keys like live ones: their 401 under the limit, a 429 past it', async () => {
    const { key: revoked, record } = await createKey({ rateLimit: '1/min' });
    await fixtureKeys.revoke(record.key_id);
    const { key: expired } = await createKey({ rateLimit: '1/min', expiresAt: new Date(WINDOW) });
    for (const key of [revoked, expired]) {
      const first = await branch(a, key);
      expect(first.statusCode).toBe(401);
      // A refused key learns nothing of a policy it can no longer use.
      expect(limitOf(first)).toEqual([undefined, undefined]);
      const calls = countCommands(a.runtime.documentClient);
      const fromMemory = await branch(a, key);
      expectError(fromMemory, 429, 'rate_limited');
      expect(limitOf(fromMemory)).toEqual(['"key";q=1;w=60', '"key";r=0;t=50']);
      expect(calls.commands).toEqual(['GetItemCommand', 'PutItemCommand']);
      expectError(await branch(b, key), 429, 'rate_limited');
      for (const res of [first, fromMemory]) expect(await usageRecordFor(res.requestId)).toBeDefined();
    }
  });
});

describe('metrics of a request', () => {
  it('a 429 publishes RateLimitedCalls (Embedded Metric Format); a call that stored no metric publishes nothing', async () => {
    const { key } = await createKey({ rateLimit: '1/min' });
    const logs = captureLogs(a.logger, 'DEBUG');
    try {
      expect((await branch(a, key)).statusCode).toBe(200);
      // No EMF document and no "nothing to publish" notice: most calls store no metric.
      expect(logs.entries.filter((entry) => '_aws' in entry)).toEqual([]);
      expect(logs.text).not.toContain('No application metrics');
      expectError(await branch(a, key), 429, 'rate_limited');
      const published = logs.entries.filter((entry) => '_aws' in entry);
      expect(published).toHaveLength(1);
      expect(published[0]).toMatchObject({ RateLimitedCalls: 1 });
    } finally {
      logs.restore();
    }
  });
});

describe('when the counter cannot be updated', () => {
  it('admits the call (fail open) with a log line and the RateLimitCounterFailed metric', async () => {
    const proxy = await startFaultProxy(process.env.DYNAMODB_ENDPOINT!);
    try {
      const service = await loadService({ ...FAST_FAILURE_ENV, DYNAMODB_ENDPOINT: proxy.endpoint });
      const { key } = await createKey({ rateLimit: '1/min' });
      proxy.inject('UpdateItem', { kind: 'error' });
      const logs = captureLogs(service.logger, 'WARN');
      const results = await Promise.all([branch(service, key), branch(service, key)]).finally(logs.restore);
      for (const res of results) {
        expect(res.statusCode).toBe(200);
        // The policy is known, what is left of it is not.
        expect(limitOf(res)).toEqual(['"key";q=1;w=60', undefined]);
        expect(await usageRecordFor(res.requestId)).toMatchObject({ status: 200 });
      }
      const failures = logs.entries.filter(
        (entry) => entry.message === 'Rate limit counter not updated; call admitted',
      );
      expect(failures).toHaveLength(2);
      expect(failures[0]).toMatchObject({ level: 'WARN', error: { name: 'DataStoreUnavailableError' } });
      expect(logs.text).toContain('"RateLimitCounterFailed"');
      expect(logs.text).not.toContain(key);

      // The database recovers: counting resumes.
      proxy.clear();
      expect(headerOf(await branch(service, key), 'RateLimit')).toBe('"key";r=0;t=50');
    } finally {
      await proxy.close();
    }
  });
});

describe('a flood at 20 times the limit, across containers, with a counter table at capacity', () => {
  const CONTAINERS = 4;
  const LIMIT = 5;
  let proxy: Awaited<ReturnType<typeof startFaultProxy>>;
  let containers: Service[];

  beforeAll(async () => {
    proxy = await startFaultProxy(process.env.DYNAMODB_ENDPOINT!);
    containers = [];
    for (let i = 0; i < CONTAINERS; i += 1) {
      containers.push(await loadService({ ...FAST_FAILURE_ENV, DYNAMODB_ENDPOINT: proxy.endpoint }));
    }
  });
  afterAll(() => proxy.close());

  /**
   * 20 × LIMIT calls, each container serving one at a time (as a Lambda container does), while
   * the counter table throttles every UpdateItem past `LIMIT + CONTAINERS - 1` in the window:
   * the most this design writes (the container that reaches the limit remembers it; each other
   * one learns it from one refused count). Any write beyond that would be throttled, fail open
   * and be admitted.
   */
  const flood = async (key: string) => {
    proxy.clear();
    proxy.resetLog();
    proxy.inject('UpdateItem', { kind: 'throttle' }, Number.POSITIVE_INFINITY, LIMIT + CONTAINERS - 1);
    const results: InvokeResult[] = [];
    for (let round = 0; round < (20 * LIMIT) / CONTAINERS; round += 1) {
      results.push(...(await Promise.all(containers.map((service) => branch(service, key)))));
    }
    const counterWrites = proxy.requests.filter((request) => request.operation === 'UpdateItem');
    return { results, counterWrites };
  };

  it('admits exactly the limit in each window, throttles nothing, and records every call', async () => {
    const { key, record } = await createKey({ rateLimit: `${LIMIT}/min` });
    const logs = captureLogs(
      containers.map((service) => service.logger),
      'WARN',
    );
    try {
      for (const second of [10, 70]) {
        at(second);
        const { results, counterWrites } = await flood(key);
        const statuses = results.map((res) => res.statusCode);
        expect(statuses.filter((status) => status === 200)).toHaveLength(LIMIT);
        expect(statuses.filter((status) => status === 429)).toHaveLength(20 * LIMIT - LIMIT);
        expect(counterWrites.length).toBeLessThanOrEqual(LIMIT + CONTAINERS - 1);
        expect(counterWrites.every((request) => request.outcome === 'forwarded')).toBe(true);
      }
    } finally {
      logs.restore();
    }
    expect(logs.text).not.toContain('Rate limit counter not updated');
    const recorded = (await usageOf()).filter((usage) => usage.key_id === record.key_id);
    expect(recorded).toHaveLength(2 * 20 * LIMIT);
    expect(recorded.filter((usage) => usage.status === 200)).toHaveLength(2 * LIMIT);
  });

  it('gives a revoked key no more: at most the limit of 401s, then 429s, every call recorded', async () => {
    const { key, record } = await createKey({ rateLimit: `${LIMIT}/min` });
    await fixtureKeys.revoke(record.key_id);
    at(10);
    const { results, counterWrites } = await flood(key);
    const statuses = results.map((res) => res.statusCode);
    expect(statuses.filter((status) => status === 401)).toHaveLength(LIMIT);
    expect(statuses.filter((status) => status === 429)).toHaveLength(20 * LIMIT - LIMIT);
    expect(counterWrites.length).toBeLessThanOrEqual(LIMIT + CONTAINERS - 1);
    const recorded = (await usageOf()).filter((usage) => usage.key_id === record.key_id);
    expect(recorded).toHaveLength(20 * LIMIT);
  });
});
