/**
 * Block leasing for large limits (docs/capacity.md "Per key"): a key whose limit is above
 * LEASE_ABOVE takes its counter in blocks of B = ceil(N / LEASE_ABOVE). Several containers are
 * several limiter instances, each with its own memory, sharing one counter table on the embedded
 * DynamoDB through the real SDK, behind the fault proxy (which throttles counter writes past the
 * bound, so a write too many would fail open and be admitted). Only Date is faked (frozen clock).
 */
import fc from 'fast-check';
import { atSecondOfWindow as at, freezeClock, WINDOW_START as WINDOW } from './support/clock';
import { startFaultProxy } from './support/fault-proxy';
import {
  countCommands,
  createKey,
  createTables,
  FAST_FAILURE_ENV,
  headerOf,
  invoke,
  loadService,
  scanRaw,
  setUpBranches,
  tableNames,
} from './support/harness';
import { createDocumentClient } from '../shared/data/dynamodb';
import { readDynamoDbSettings } from '../shared/config/env';
import { RateLimitsRepository } from '../shared/data/repositories/rate-limits';
import type { ApiKeyRecord } from '../shared/domain/key-record';
import { policyMemory, rateLimit, type RateLimitOptions } from '../shared/api/middlewares/rate-limit';
import type { ApiContext, ApiRequest } from '../shared/api/middlewares';
import { blockSize, LEASE_ABOVE, tokensGranted } from '../shared/domain/rate-limit';

let proxy: Awaited<ReturnType<typeof startFaultProxy>>;
let counter: RateLimitsRepository;

beforeAll(async () => {
  await createTables();
  proxy = await startFaultProxy(process.env.DYNAMODB_ENDPOINT!);
  // Two attempts as deployed, but no timeout of our own: a busy machine's slow answer is not a fault
  // here, and a timed-out ADD that was applied and then retried would count a block twice.
  const env = {
    ...process.env,
    ...FAST_FAILURE_ENV,
    DYNAMODB_CONNECT_TIMEOUT_MS: '5000',
    DYNAMODB_REQUEST_TIMEOUT_MS: '30000',
    DYNAMODB_DEADLINE_MS: '61000',
    DYNAMODB_ENDPOINT: proxy.endpoint,
  };
  const settings = readDynamoDbSettings(env);
  counter = new RateLimitsRepository(createDocumentClient(settings, env), tableNames.rateLimits);
});
afterAll(() => proxy.close());

beforeEach(() => {
  freezeClock();
  at(10);
  proxy.clear();
  proxy.resetLog();
});
afterEach(() => jest.useRealTimers());

let keys = 0;
const aKey = (rateLimit: string): ApiKeyRecord =>
  ({ key_id: `key_lease_${(keys += 1)}`, branch_id: 'br_lease', rate_limit: rateLimit }) as ApiKeyRecord;

/** One container: a limiter with its own memory, and what it logged and counted. */
const container = (options: Partial<RateLimitOptions> = {}) => {
  const warnings: string[] = [];
  const metrics: string[] = [];
  const middleware = rateLimit({
    counter,
    defaultLimit: { limit: 50, windowSeconds: 1 },
    logger: { warn: (message: string) => void warnings.push(message) },
    // Records the metric names; the chain's logMetrics is not part of this test.
    metrics: { addMetric: (name: string) => void metrics.push(name) } as unknown as RateLimitOptions['metrics'],
    ...options,
  });
  /**
   * One call as Middy runs the limiter: `before`, then `after`, or `onError` when either throws.
   * `refusedAs` is the 401 of a revoked key: `authenticate` threw it before the limiter's `before`.
   */
  const call = async (apiKey: ApiKeyRecord, refusedAs?: number) => {
    const context = { apiKey, receivedAt: new Date() } as ApiContext;
    const request = { context, event: {}, internal: {} } as unknown as ApiRequest;
    try {
      if (refusedAs) throw Object.assign(new Error('refused key'), { statusCode: refusedAs });
      await middleware.before!(request);
      await middleware.after!(request);
      return { status: 200, headers: context.responseHeaders ?? {} };
    } catch (error) {
      request.error = error as Error;
      await middleware.onError!(request);
      return {
        status: (request.error as unknown as { statusCode: number }).statusCode,
        headers: context.responseHeaders ?? {},
      };
    }
  };
  return { call, warnings, metrics };
};
type Container = ReturnType<typeof container>;

const counterWrites = () => proxy.requests.filter((request) => request.operation === 'UpdateItem');
const countOf = async (keyId: string, windowStart = WINDOW) =>
  (await scanRaw(tableNames.rateLimits)).find((item) => item.pk?.S === `${keyId}#${windowStart / 1000}`)?.count?.N;

/**
 * `calls` calls of one key, each container serving one at a time (as a Lambda container does),
 * while the counter table throttles every UpdateItem past `ceil(N / B) + C`: the most leasing
 * writes in a window. Any write beyond it would be throttled, fail open and be admitted.
 */
const flood = async (containers: Container[], apiKey: ApiKeyRecord, calls: number, limit: number, block: number) => {
  proxy.clear();
  proxy.resetLog();
  const bound = Math.ceil(limit / block) + containers.length;
  proxy.inject('UpdateItem', { kind: 'throttle' }, Number.POSITIVE_INFINITY, bound);
  const statuses: number[] = [];
  for (let round = 0; round < calls / containers.length; round += 1) {
    const answers = await Promise.all(containers.map((one) => one.call(apiKey)));
    statuses.push(...answers.map((answer) => answer.status));
  }
  return { statuses, writes: counterWrites(), bound };
};

describe('the block size', () => {
  it('is 1 (one write per call) up to LEASE_ABOVE, then ceil(N / LEASE_ABOVE): at most 500 blocks a window', () => {
    expect(LEASE_ABOVE).toBe(500);
    expect([50, 500, 501, 1000, 1001, 100_000, 1_000_000].map((n) => blockSize(n))).toEqual([1, 1, 2, 2, 3, 200, 2000]);
    fc.assert(fc.property(fc.integer({ min: 1, max: 1_000_000 }), (n) => Math.ceil(n / blockSize(n)) <= LEASE_ABOVE));
  });

  it('grants the units of a block that land at or below the limit', () => {
    // N = 100, B = 40: counts 40 and 80 grant 40, 120 grants 20, 160 grants none.
    expect([40, 80, 120, 160].map((count) => tokensGranted(100, count, 40))).toEqual([40, 40, 20, 0]);
  });
});

describe('a flood at 20 times a leased key`s limit, across four containers, with a counter table at capacity', () => {
  const LIMIT = 2000;
  const LEASE_AT = 50;
  const BLOCK = blockSize(LIMIT, LEASE_AT); // 40

  it('admits no more than N per window (and no fewer than N − C × (B − 1)), throttles nothing, in each window', async () => {
    const containers = [1, 2, 3, 4].map(() => container({ leaseAbove: LEASE_AT }));
    const apiKey = aKey(`${LIMIT}/min`);
    for (const [second, windowStart] of [
      [10, WINDOW],
      [70, WINDOW + 60_000],
    ] as const) {
      at(second);
      const { statuses, writes, bound } = await flood(containers, apiKey, 20 * LIMIT, LIMIT, BLOCK);
      const admitted = statuses.filter((status) => status === 200).length;
      expect(admitted).toBeLessThanOrEqual(LIMIT);
      expect(admitted).toBeGreaterThanOrEqual(LIMIT - containers.length * (BLOCK - 1));
      // Every container keeps receiving calls, so every lease is drained: exactly N.
      expect(admitted).toBe(LIMIT);
      expect(statuses.filter((status) => status === 429)).toHaveLength(20 * LIMIT - admitted);
      expect(writes.length).toBeLessThanOrEqual(bound);
      expect(writes.every((request) => request.outcome === 'forwarded')).toBe(true);
      // The window's item: its blocks, the last of them past N (a new window starts a new lease).
      expect(Number(await countOf(apiKey.key_id, windowStart))).toBe(writes.length * BLOCK);
    }
    for (const one of containers) expect(one.warnings).toEqual([]);
  });

  it('holds at the real default threshold: a 5000/min key (B = 10) costs at most 504 counter writes', async () => {
    const limit = 5000;
    const containers = [1, 2, 3, 4].map(() => container());
    const { statuses, writes, bound } = await flood(containers, aKey(`${limit}/min`), 20 * limit, limit, 10);
    expect(bound).toBe(504);
    expect(statuses.filter((status) => status === 200)).toHaveLength(limit);
    expect(writes.length).toBeLessThanOrEqual(bound);
    expect(writes.every((request) => request.outcome === 'forwarded')).toBe(true);
  });

  it('gives a revoked key no more: at most N of its 401s, then 429s, within the same writes', async () => {
    const containers = [1, 2, 3, 4].map(() => container({ leaseAbove: LEASE_AT }));
    const apiKey = aKey(`${LIMIT}/min`);
    proxy.inject('UpdateItem', { kind: 'throttle' }, Number.POSITIVE_INFINITY, LIMIT / BLOCK + containers.length);
    const statuses: number[] = [];
    for (let round = 0; round < (20 * LIMIT) / containers.length; round += 1) {
      statuses.push(...(await Promise.all(containers.map((one) => one.call(apiKey, 401)))).map((res) => res.status));
    }
    expect(statuses.filter((status) => status === 401)).toHaveLength(LIMIT);
    expect(statuses.filter((status) => status === 429)).toHaveLength(19 * LIMIT);
    expect(counterWrites().every((request) => request.outcome === 'forwarded')).toBe(true);
  });
});

describe('what a leased key sees', () => {
  it('RateLimit: what the counter had left for the window plus this container`s lease', async () => {
    const [a, b] = [container({ leaseAbove: 50 }), container({ leaseAbove: 50 })];
    const apiKey = aKey('2000/min'); // B = 40
    const first = await a.call(apiKey);
    expect(first.headers).toEqual({ 'RateLimit-Policy': '"key";q=2000;w=60', RateLimit: '"key";r=1999;t=50' });
    expect((await a.call(apiKey)).headers.RateLimit).toBe('"key";r=1998;t=50');
    // b takes the second block (count 80): 1,920 left on the counter plus its 39.
    expect((await b.call(apiKey)).headers.RateLimit).toBe('"key";r=1959;t=50');
    expect(counterWrites()).toHaveLength(2);
    expect(await countOf(apiKey.key_id)).toBe('80');
  });

  it('starts a new lease when the window ends: the old window`s tokens are not spent in the next', async () => {
    const a = container({ leaseAbove: 50 });
    const apiKey = aKey('2000/min');
    await a.call(apiKey);
    at(60);
    expect((await a.call(apiKey)).headers.RateLimit).toBe('"key";r=1999;t=60');
    expect(counterWrites()).toHaveLength(2);
    expect(await countOf(apiKey.key_id, WINDOW + 60_000)).toBe('40');
  });

  it('keeps at most maxLeases keys per container: past it a dropped lease costs a new block, never an extra admission', async () => {
    const writesFor = async (maxLeases: number) => {
      proxy.resetLog();
      const a = container({ leaseAbove: 50, maxLeases });
      const [k1, k2, k3] = [aKey('2000/min'), aKey('2000/min'), aKey('2000/min')];
      for (const apiKey of [k1, k2, k3, k1]) expect((await a.call(apiKey)).status).toBe(200);
      return { writes: counterWrites().length, k1: await countOf(k1.key_id) };
    };
    // Within the bound: k1's second call spends its lease.
    expect(await writesFor(3)).toEqual({ writes: 3, k1: '40' });
    // Past it: the third key's lease drops the others (none expired); k1 takes a new block.
    expect(await writesFor(2)).toEqual({ writes: 4, k1: '80' });
  });

  it('fails open on a real counter fault: admitted, logged and counted, and every call waiting on the block too', async () => {
    const a = container({ leaseAbove: 50 });
    const apiKey = aKey('2000/min');
    proxy.inject('UpdateItem', { kind: 'error' });
    const results = await Promise.all([a.call(apiKey), a.call(apiKey), a.call(apiKey)]);
    for (const res of results) {
      expect(res.status).toBe(200);
      expect(res.headers).toEqual({ 'RateLimit-Policy': '"key";q=2000;w=60' });
    }
    // The three calls shared one block (one UpdateItem, retried once by the SDK).
    expect(counterWrites()).toHaveLength(2);
    expect(a.warnings).toEqual(Array(3).fill('Rate limit counter not updated; call admitted'));
    expect(a.metrics).toEqual(Array(3).fill('RateLimitCounterFailed'));
    proxy.clear();
    expect((await a.call(apiKey)).headers.RateLimit).toBe('"key";r=1999;t=50');
  });
});

describe('random interleavings across containers, calls in flight at once', () => {
  it('never admits more than N, strands at most C × (B − 1), and writes at most ceil(N / B) + C', async () => {
    const run = fc.record({
      // Always leased (N > leaseAbove): the exact path counts each call in flight as a container.
      limit: fc.integer({ min: 13, max: 80 }),
      leaseAbove: fc.integer({ min: 1, max: 12 }),
      containers: fc.integer({ min: 1, max: 4 }),
      // Each burst: a container and how many of its calls are in flight at once.
      bursts: fc.array(fc.tuple(fc.nat(3), fc.integer({ min: 1, max: 6 })), { minLength: 1, maxLength: 40 }),
    });
    await fc.assert(
      fc.asyncProperty(run, async ({ limit, leaseAbove, containers, bursts }) => {
        proxy.resetLog();
        const block = blockSize(limit, leaseAbove);
        const pool = Array.from({ length: containers }, () => container({ leaseAbove }));
        const apiKey = aKey(`${limit}/h`);
        const inFlight = bursts.map(([which, size]) =>
          Promise.all(Array.from({ length: size }, () => pool[which % containers]!.call(apiKey))),
        );
        const statuses = (await Promise.all(inFlight)).flat().map((res) => res.status);
        const admitted = statuses.filter((status) => status === 200).length;
        expect(admitted).toBeLessThanOrEqual(limit);
        expect(admitted).toBeGreaterThanOrEqual(Math.min(statuses.length, limit - containers * (block - 1)));
        expect(counterWrites().length).toBeLessThanOrEqual(Math.ceil(limit / block) + containers);
        for (const one of pool) expect(one.warnings).toEqual([]);
      }),
      { numRuns: 40 },
    );
  });
});

describe('through the real functions, at the default threshold', () => {
  beforeAll(() => setUpBranches());

  it('counts a 1000/min key in blocks of 2 and leaves a 500/min key one write per call', async () => {
    const service = await loadService({ DEFAULT_RATE_LIMIT: undefined });
    const branch = (key: string) => invoke(service.getBranch, { path: '/v1/branch', key });
    const writesOf = async (key: string) => {
      const calls = countCommands(service.runtime.documentClient);
      const res = await branch(key);
      return [headerOf(res, 'RateLimit'), calls.commands.filter((name) => name === 'UpdateItemCommand').length];
    };
    const { key: leased, record } = await createKey({ rateLimit: '1000/min' });
    expect([await writesOf(leased), await writesOf(leased), await writesOf(leased)]).toEqual([
      ['"key";r=999;t=50', 1],
      ['"key";r=998;t=50', 0],
      ['"key";r=997;t=50', 1],
    ]);
    expect(await countOf(record.key_id)).toBe('4');
    const { key: exact } = await createKey({ rateLimit: '500/min' });
    expect([await writesOf(exact), await writesOf(exact)]).toEqual([
      ['"key";r=499;t=50', 1],
      ['"key";r=498;t=50', 1],
    ]);
  });
});

describe('the limits a container keeps parsed', () => {
  it('gives every key its own limit past the bound of distinct limits kept (maxPolicies)', async () => {
    const { call } = container({ maxPolicies: 3 });
    // Five distinct limits through a memory of three, then the first ones again after it started over.
    const limits = ['7/s', '8/min', '9/h', '10/s', '11/min', '7/s', '8/min'];
    const policies = [];
    for (const limit of limits) policies.push((await call(aKey(limit))).headers['RateLimit-Policy']);
    expect(policies).toEqual([
      '"key";q=7;w=1',
      '"key";q=8;w=60',
      '"key";q=9;w=3600',
      '"key";q=10;w=1',
      '"key";q=11;w=60',
      '"key";q=7;w=1',
      '"key";q=8;w=60',
    ]);
  });

  it('holds at most maxPolicies parsed limits, whatever the number of distinct ones', () => {
    const memory = policyMemory({ limit: 50, windowSeconds: 1 }, 3);
    const sizes = [];
    for (let limit = 1; limit <= 10; limit += 1) {
      expect(memory.of(`${limit}/min`)).toEqual({ limit, windowSeconds: 60, field: `"key";q=${limit};w=60` });
      sizes.push(memory.size());
    }
    expect(Math.max(...sizes)).toBe(3);
    // The default needs no entry.
    expect(memory.of(undefined)).toEqual({ limit: 50, windowSeconds: 1, field: '"key";q=50;w=1' });
  });

  it('falls back to the default limit for a stored limit it cannot read, every time', async () => {
    const { call } = container({ maxPolicies: 2 });
    for (let i = 0; i < 3; i += 1) {
      expect((await call(aKey('lots/s'))).headers['RateLimit-Policy']).toBe('"key";q=50;w=1');
    }
  });
});
