/**
 * End to end through the local gateway on dynalite: sequential latency per endpoint, throughput
 * at concurrency 8 against the bare HTTP harness, and the gateway's memory over 20,000 requests.
 * dynalite, the gateway and the bare harness each run in their own process; the load comes from
 * this one (a keep-alive node:http client for the sequential part, autocannon for the rest).
 */
import { Agent, request as httpRequest } from 'node:http';
import autocannon from 'autocannon';
import { startChild, type Child } from './lib/child';
import { ENDPOINTS, type EndpointName } from './lib/fixtures';
import { percentile, round, slope } from './lib/stats';

interface DynamoReady {
  endpoint: string;
  key: string;
  /** The gateway's keys (bench/children/dynamo.ts); `key` is the first. */
  keys: string[];
  /** The bare harness's own key: its counter writes leave the gateway's keys' windows alone. */
  keyHash: string;
  keyId: string;
  tables: { keys: string; usage: string; branchData: string; rateLimits: string };
}
interface ServerReady {
  baseUrl: string;
}
interface MemorySample {
  gc: boolean;
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
}

const settings = {
  sequentialWarmup: Number(process.env.BENCH_SEQ_WARMUP ?? 30),
  /**
   * Pairs per endpoint: one request to the gateway and one to the bare harness each. 1,000: with
   * 400 the p50 ratio of one endpoint moved by ±0.05 between runs on a quiet machine, as much as
   * the margin to the 1.1× target (docs/performance.md "Method").
   */
  sequentialRequests: Number(process.env.BENCH_SEQ_REQUESTS ?? 1000),
  throughputSeconds: Number(process.env.BENCH_THROUGHPUT_SECONDS ?? 3),
  /** Rounds of both sides, bare first in even rounds and gateway first in odd ones (ABBA). */
  throughputRounds: Number(process.env.BENCH_THROUGHPUT_ROUNDS ?? 4),
  connections: 8,
  memoryRequests: Number(process.env.BENCH_MEMORY_REQUESTS ?? 20_000),
  memoryBatches: Number(process.env.BENCH_MEMORY_BATCHES ?? 10),
};

/** One GET over a keep-alive connection; resolves with the status, the limiter's field and the time to the last byte, in ms. */
const get = (agent: Agent, url: string, key: string): Promise<{ status: number; counted: boolean; ms: number }> =>
  new Promise((resolve, reject) => {
    const start = process.hrtime.bigint();
    const req = httpRequest(url, { agent, headers: { authorization: `Bearer ${key}` } }, (res) => {
      res.resume();
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          counted: res.headers.ratelimit !== undefined,
          ms: Number(process.hrtime.bigint() - start) / 1e6,
        }),
      );
      res.on('error', reject);
    });
    req.setTimeout(10_000, () => req.destroy(new Error(`GET ${url} timed out`)));
    req.on('error', reject);
    req.end();
  });

/** One measured GET: it must answer 200 and, with `counted`, carry the limiter's remaining count. */
const checked = async (agent: Agent, url: string, key: string, counted: boolean) => {
  const { status, ms, counted: wasCounted } = await get(agent, url, key);
  if (status !== 200) throw new Error(`GET ${url} answered ${status}`);
  // Without the limiter's remaining count the call took the fail-open path: the bench stops.
  if (counted && !wasCounted) throw new Error(`GET ${url} took the rate limiter's fail-open path`);
  return ms;
};

/**
 * Sequential latency of one path on the gateway and on the bare harness, side by side: each
 * iteration sends one request to each, in alternating order, each over its own keep-alive
 * connection, so a change in machine load falls on both sides of a pair alike.
 */
const sequentialPaired = async (
  gatewayUrl: string,
  bareUrl: string,
  keys: readonly string[],
  path: string,
  requests: number,
) => {
  const agents = {
    gateway: new Agent({ keepAlive: true, maxSockets: 1 }),
    bare: new Agent({ keepAlive: true, maxSockets: 1 }),
  };
  const times = { gateway: [] as number[], bare: [] as number[] };
  try {
    for (let i = 0; i < settings.sequentialWarmup + requests; i += 1) {
      const order = i % 2 === 0 ? (['gateway', 'bare'] as const) : (['bare', 'gateway'] as const);
      for (const side of order) {
        const base = side === 'gateway' ? gatewayUrl : bareUrl;
        // The keys in turn, as in `load`: each stays well under its limit.
        const ms = await checked(agents[side], `${base}${path}`, keys[i % keys.length]!, side === 'gateway');
        if (i >= settings.sequentialWarmup) times[side].push(ms);
      }
    }
  } finally {
    agents.gateway.destroy();
    agents.bare.destroy();
  }
  const figures = (one: number[]) => ({ p50: round(percentile(one, 50), 2), p99: round(percentile(one, 99), 2) });
  return { gateway: figures(times.gateway), bare: figures(times.bare) };
};

/** A key of the right shape whose checksum is wrong: refused before any database read. */
const malformed = (key: string) => `${key.slice(0, -1)}${key.endsWith('A') ? 'B' : 'A'}`;

/**
 * autocannon over the four endpoints in turn, for `seconds` or `amount` requests. With
 * `withErrors`, each success is followed by a request the stack ends before the database (bad
 * checksum 401, no key 401, unknown route 404, wrong method 405), so the error path is covered too.
 */
const load = async (
  baseUrl: string,
  keys: readonly string[],
  run: { seconds?: number; amount?: number; withErrors?: boolean },
) => {
  const stage = new URL(baseUrl).pathname;
  const [key] = keys as [string];
  const auth = { authorization: `Bearer ${key}` };
  // Every key on every endpoint in turn: each key gets 1/keys of the load, well under its limit.
  const success = keys.flatMap((one) =>
    ENDPOINTS.map((endpoint) => ({
      method: 'GET' as const,
      path: `${stage}${endpoint.path}`,
      headers: { authorization: `Bearer ${one}` },
    })),
  );
  const errors = [
    { method: 'GET' as const, path: `${stage}/v1/branch`, headers: { authorization: `Bearer ${malformed(key)}` } },
    { method: 'GET' as const, path: `${stage}/v1/members`, headers: {} },
    { method: 'GET' as const, path: `${stage}/v1/unknown`, headers: auth },
    { method: 'POST' as const, path: `${stage}/v1/payment-providers`, headers: auth },
  ];
  const requests = run.withErrors ? success.flatMap((one, i) => [one, errors[i % errors.length]!]) : success;
  const result = await autocannon({
    url: baseUrl,
    connections: settings.connections,
    ...(run.amount ? { amount: run.amount } : { duration: run.seconds ?? 5 }),
    timeout: 10,
    requests,
  });
  const expected4xx = run.withErrors ? Math.floor(result.requests.total / 2) : 0;
  if (result.errors > 0 || result['5xx'] > 0 || Math.abs(result['4xx'] - expected4xx) > settings.connections) {
    throw new Error(
      `load on ${baseUrl}: ${result['4xx']} 4xx (expected ${expected4xx}), ${result['5xx']} 5xx, ${result.errors} errors`,
    );
  }
  return {
    ok: result['2xx'],
    seconds: result.duration,
    latencyP50: result.latency.p50,
    latencyP99: result.latency.p99,
  };
};

export const runEndToEnd = async () => {
  const children: Child<unknown>[] = [];
  try {
    const dynamo = await startChild<DynamoReady>('bench/children/dynamo.ts', {});
    children.push(dynamo);
    const { endpoint, keys, keyHash, tables } = dynamo.ready;
    const env = {
      DYNAMODB_ENDPOINT: endpoint,
      AWS_REGION: 'local',
      KEYS_TABLE: tables.keys,
      USAGE_TABLE: tables.usage,
      BRANCH_DATA_TABLE: tables.branchData,
      RATE_LIMITS_TABLE: tables.rateLimits,
      POWERTOOLS_LOG_LEVEL: 'INFO',
    };
    const gateway = await startChild<ServerReady>('bench/children/gateway.ts', env, { execArgv: ['--expose-gc'] });
    children.push(gateway);
    const bare = await startChild<ServerReady>('bench/children/bare-server.ts', { ...env, BENCH_KEY_HASH: keyHash });
    children.push(bare);
    const memory = () => gateway.request<MemorySample>('memory');
    const rssAtStart = await memory();

    // Warm-up: connections, JIT, SDK endpoint and credential caches on both sides.
    await load(gateway.ready.baseUrl, keys, { amount: 400 });
    await load(bare.ready.baseUrl, keys, { amount: 400 });

    const latency: Record<
      string,
      { gateway: { p50: number; p99: number }; bare: { p50: number; p99: number }; ratio: number }
    > = {};
    for (const one of ENDPOINTS) {
      const measured = await sequentialPaired(
        gateway.ready.baseUrl,
        bare.ready.baseUrl,
        keys,
        one.path,
        settings.sequentialRequests,
      );
      latency[one.name] = { ...measured, ratio: round(measured.gateway.p50 / measured.bare.p50, 2) };
    }

    // Alternating rounds in ABBA order, so a change in machine load falls on both sides alike.
    const totals = { gateway: { ok: 0, seconds: 0 }, bare: { ok: 0, seconds: 0 } };
    for (let round_ = 0; round_ < settings.throughputRounds; round_ += 1) {
      const sides = [
        ['bare', bare],
        ['gateway', gateway],
      ] as const;
      for (const [name, server] of round_ % 2 === 0 ? sides : [...sides].reverse()) {
        const result = await load(server.ready.baseUrl, keys, { seconds: settings.throughputSeconds });
        totals[name].ok += result.ok;
        totals[name].seconds += result.seconds;
      }
    }
    const gatewayRps = totals.gateway.ok / totals.gateway.seconds;
    const bareRps = totals.bare.ok / totals.bare.seconds;

    // Memory: batches of requests (half successes, half refused before the database), a sample
    // (after a forced GC) after each.
    const batchSize = Math.ceil(settings.memoryRequests / settings.memoryBatches);
    const samples = [{ requests: 0, ...(await memory()) }];
    for (let batch = 1; batch <= settings.memoryBatches; batch += 1) {
      await load(gateway.ready.baseUrl, keys, { amount: batchSize, withErrors: true });
      samples.push({ requests: batch * batchSize, ...(await memory()) });
    }
    // The first batch settles the process at its working size (heap spaces, JIT code, sockets):
    // the trend is taken over the samples after it.
    const settled = samples.slice(1);
    const xs = settled.map((sample) => sample.requests);
    const mb = (bytes: number) => round(bytes / 1024 / 1024, 1);
    const first = samples[0]!;
    const last = samples[samples.length - 1]!;

    return {
      sequential: {
        warmup: settings.sequentialWarmup,
        requests: settings.sequentialRequests,
        byEndpoint: latency as Record<EndpointName, (typeof latency)[string]>,
      },
      throughput: {
        connections: settings.connections,
        seconds: settings.throughputSeconds * settings.throughputRounds,
        gatewayRps: round(gatewayRps, 0),
        bareRps: round(bareRps, 0),
        ratio: round(gatewayRps / bareRps, 2),
      },
      memory: {
        requests: last.requests,
        gcForced: first.gc,
        rssAtStartMb: mb(rssAtStart.rss),
        rssBeforeMb: mb(first.rss),
        rssAfterFirstBatchMb: mb(settled[0]!.rss),
        rssAfterMb: mb(last.rss),
        heapBeforeMb: mb(first.heapUsed),
        heapAfterMb: mb(last.heapUsed),
        /** Least-squares slopes over the samples after the first batch, in bytes per request. */
        rssSlopeBytesPerRequest: round(
          slope(
            xs,
            settled.map((sample) => sample.rss),
          ),
          2,
        ),
        heapSlopeBytesPerRequest: round(
          slope(
            xs,
            settled.map((sample) => sample.heapUsed),
          ),
          2,
        ),
        /** Growth over the second half of the run: a leak keeps growing, a process settling does not. */
        rssSecondHalfGrowthMb: mb(last.rss - samples[Math.floor(samples.length / 2)]!.rss),
        heapSecondHalfGrowthMb: round(
          (last.heapUsed - samples[Math.floor(samples.length / 2)]!.heapUsed) / 1024 / 1024,
          2,
        ),
        samples: samples.map((sample) => ({
          requests: sample.requests,
          rssMb: mb(sample.rss),
          heapMb: mb(sample.heapUsed),
        })),
      },
    };
  } finally {
    for (const child of children.reverse()) await child.stop();
  }
};
