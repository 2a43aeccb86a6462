/**
 * End to end: the local gateway serving the real handlers (lib/local/gateway.ts) beside a bare
 * node:http server making the same DynamoDB calls (bench/children/bare-server.ts), both on one
 * embedded DynamoDB, each in a process of its own, the load from this one. Latency: one request
 * to each side per pair, in alternating order, over keep-alive connections. Throughput: rounds of
 * autocannon in ABBA order. Tables, demo data and keys are made with the CLI.
 */
import { Agent, request as httpRequest } from 'node:http';
import { DEMO_SEED_FILE } from '../../lib/project-paths';
import { tableDefinitions } from '../../shared/data/tables';
import { hashApiKey } from '../../shared/domain/api-key';
import { ENDPOINTS } from '../lib/fixtures';
import { load, LOAD_KEY_RATE_LIMIT, LOAD_KEYS, requestsFor } from '../lib/load';
import { runCli, startChild, type Child } from '../lib/processes';
import type { PartResult, Row } from '../lib/report';
import { createKeys } from '../lib/stack';
import { median, round } from '../lib/stats';

export const LATENCY_RATIO = 1.1;
export const THROUGHPUT_RATIO = 0.9;
const PAIRS = 300;
const WARMUP_PAIRS = 30;
const ROUNDS = 8;
const ROUND_SECONDS = 2;
const CONNECTIONS = 8;

/** One GET over a keep-alive connection: its time in ms. Fails unless 200, and on the gateway counted by the limiter. */
export const timedGet = (agent: Agent, url: string, key: string, counted: boolean): Promise<number> =>
  new Promise((resolve, reject) => {
    const start = process.hrtime.bigint();
    const req = httpRequest(url, { agent, headers: { authorization: `Bearer ${key}` } }, (res) => {
      res.resume();
      res.on('end', () => {
        if (res.statusCode !== 200) reject(new Error(`GET ${url} answered ${res.statusCode}`));
        else if (counted && res.headers.ratelimit === undefined) reject(new Error(`GET ${url} was not counted`));
        else resolve(Number(process.hrtime.bigint() - start) / 1e6);
      });
    });
    req.setTimeout(10_000, () => req.destroy(new Error(`GET ${url} timed out`)));
    req.on('error', reject);
    req.end();
  });

const latencyPairs = async (gateway: string, bare: string, keys: readonly string[], path: string) => {
  const agents = [new Agent({ keepAlive: true, maxSockets: 1 }), new Agent({ keepAlive: true, maxSockets: 1 })];
  const times = { gateway: [] as number[], bare: [] as number[] };
  try {
    for (let i = 0; i < WARMUP_PAIRS + PAIRS; i += 1) {
      const key = keys[i % keys.length]!;
      const one = async (side: 'gateway' | 'bare') => {
        const ms = await timedGet(
          agents[side === 'gateway' ? 0 : 1]!,
          `${side === 'gateway' ? gateway : bare}${path}`,
          key,
          side === 'gateway',
        );
        if (i >= WARMUP_PAIRS) times[side].push(ms);
      };
      for (const side of i % 2 === 0 ? (['gateway', 'bare'] as const) : (['bare', 'gateway'] as const)) await one(side);
    }
  } finally {
    for (const agent of agents) agent.destroy();
  }
  const p50 = { gateway: median(times.gateway), bare: median(times.bare) };
  return {
    gatewayP50Ms: round(p50.gateway, 2),
    bareP50Ms: round(p50.bare, 2),
    ratio: round(p50.gateway / p50.bare, 2),
  };
};

export const runEndToEnd = async (): Promise<PartResult> => {
  const children: Child<unknown>[] = [];
  try {
    const dynamo = await startChild<{ endpoint: string }>('bench/children/dynamo.ts', {});
    children.push(dynamo);
    const { endpoint } = dynamo.ready;
    runCli(['tables', 'create'], { DYNAMODB_ENDPOINT: endpoint });
    runCli(['seed', DEMO_SEED_FILE], { DYNAMODB_ENDPOINT: endpoint });
    // One key more for the bare server: its counter writes leave the gateway's keys' windows alone.
    const keys = createKeys(endpoint, LOAD_KEYS + 1, LOAD_KEY_RATE_LIMIT);
    const bareKey = keys.pop()!;
    const env = {
      DYNAMODB_ENDPOINT: endpoint,
      AWS_REGION: 'local',
      POWERTOOLS_LOG_LEVEL: 'INFO',
      ...Object.fromEntries(tableDefinitions.map((table) => [table.envVar, table.localName])),
    };
    const gateway = await startChild<{ baseUrl: string }>('bench/children/gateway.ts', env);
    children.push(gateway);
    const bare = await startChild<{ baseUrl: string }>('bench/children/bare-server.ts', {
      ...env,
      BENCH_KEY_HASH: hashApiKey(bareKey),
    });
    children.push(bare);
    const urls = { gateway: gateway.ready.baseUrl, bare: bare.ready.baseUrl };

    // Warm-up: connections, JIT, the SDK's caches on both sides.
    for (const url of Object.values(urls)) {
      await load(url, { connections: CONNECTIONS, amount: 400, requests: requestsFor(url, keys) });
    }
    const latency: Record<string, Awaited<ReturnType<typeof latencyPairs>>> = {};
    for (const one of ENDPOINTS) latency[one.name] = await latencyPairs(urls.gateway, urls.bare, keys, one.path);

    const totals = { gateway: { ok: 0, seconds: 0 }, bare: { ok: 0, seconds: 0 } };
    for (let round_ = 0; round_ < ROUNDS; round_ += 1) {
      const sides = round_ % 2 === 0 ? (['bare', 'gateway'] as const) : (['gateway', 'bare'] as const);
      for (const side of sides) {
        const run = { connections: CONNECTIONS, seconds: ROUND_SECONDS, requests: requestsFor(urls[side], keys) };
        const { ok, seconds } = await load(urls[side], run);
        totals[side].ok += ok;
        totals[side].seconds += seconds;
      }
    }
    const rps = (side: 'gateway' | 'bare') => totals[side].ok / totals[side].seconds;
    const throughput = {
      connections: CONNECTIONS,
      gatewayRps: round(rps('gateway'), 0),
      bareRps: round(rps('bare'), 0),
      ratio: round(rps('gateway') / rps('bare'), 2),
    };
    const rows: Row[] = Object.entries(latency).map(([name, one]) => ({
      figure: `End to end ${name}: gateway p50 ÷ bare p50 (${one.gatewayP50Ms} ÷ ${one.bareP50Ms} ms, ${PAIRS} pairs)`,
      measured: `${one.ratio}×`,
      target: `≤ ${LATENCY_RATIO}×`,
      met: one.ratio <= LATENCY_RATIO,
    }));
    rows.push({
      figure: `End to end throughput at c=${CONNECTIONS}: gateway ÷ bare (${throughput.gatewayRps} ÷ ${throughput.bareRps} req/s)`,
      measured: `${throughput.ratio}×`,
      target: `≥ ${THROUGHPUT_RATIO}×`,
      met: throughput.ratio >= THROUGHPUT_RATIO,
    });
    return { figures: { pairs: PAIRS, latency, throughput }, rows };
  } finally {
    for (const child of children.reverse()) await child.stop();
  }
};
