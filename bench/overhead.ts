/**
 * Own overhead per request, in-process: the real handler modules (Middy stack, middlewares,
 * handler, response) and their shared runtime, with the DynamoDB transport replaced by the
 * instant responder (bench/lib/responder.ts), against a bare function that makes the same SDK
 * calls through an identically configured client and the same responder. Runs as a child of
 * bench/run.ts with a Lambda-like environment (LAMBDA_ENV in bench/coldstart.ts); prints one JSON line.
 *
 * Each iteration runs both, in alternating order, and keeps the difference of the pair, so
 * drift in machine load affects both sides of a pair alike.
 *
 * The endpoints are measured warm: first GetBranch as a fresh container runs it (for information),
 * then every endpoint round robin until V8 has moved the shared code to its top tier, then each
 * endpoint (docs/performance.md "Fifth round: the JIT's state").
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { Context } from 'aws-lambda';
import { handler as getBranch } from '../functions/get-branch';
import { handler as getPaymentProvider } from '../functions/get-payment-provider';
import { handler as listMembers } from '../functions/list-members';
import { handler as listPaymentProviders } from '../functions/list-payment-providers';
import { buildContext, buildEvent } from '../lib/local/events';
import { createDocumentClient } from '../shared/data/dynamodb';
import type { ApiEvent, ApiResponse } from '../shared/api/http/response';
import type { ApiContext } from '../shared/api/middlewares';
import { config, documentClient } from '../shared/lambda/runtime';
import { createBareRequest } from './lib/bare';
import { benchKey, ENDPOINTS, type EndpointName } from './lib/fixtures';
import { createLayers } from './lib/layers';
import { createResponder, useTransport } from './lib/responder';
import { percentile, round } from './lib/stats';

const WARMUP = Number(process.env.BENCH_OVERHEAD_WARMUP ?? 800);
const ITERATIONS = Number(process.env.BENCH_OVERHEAD_ITERATIONS ?? 4000);
/** Per endpoint, measured pairs stop here even if ITERATIONS were not reached (a busy machine). */
const MAX_SECONDS = Number(process.env.BENCH_OVERHEAD_SECONDS ?? 8);
/** Each step of the breakdown, and each single-call comparison: shorter runs, for information. */
const LAYER_RUN = { warmup: 1000, iterations: 4000, maxSeconds: Math.min(MAX_SECONDS, 3) };
const CALL_RUN = { warmup: 500, iterations: 3000, maxSeconds: Math.min(MAX_SECONDS, 3) };
/** A fresh container: GetBranch's requests 801 to 3,800, before our middlewares are at V8's top tier. */
const FRESH_RUN = { warmup: 800, iterations: 3000, maxSeconds: MAX_SECONDS };
/**
 * Pairs, round robin over every endpoint, between the fresh-container figure and the warm ones,
 * their p50 kept per block. V8 (Node 24) compiles a function with its top tier, TurboFan, only
 * after about 10,500 calls here; until then the middlewares every endpoint shares run as Maglev
 * code and a request costs 10-20 µs more. Without this phase an endpoint's figure depended on how
 * many requests the endpoints measured before it had run (docs/performance.md "Fifth round").
 */
const TIER_UP_PAIRS = Number(process.env.BENCH_OVERHEAD_TIER_UP ?? 14_000);
const TIER_UP_BLOCK = 2_000;

type Fn = (event: ApiEvent, context: ApiContext) => Promise<ApiResponse>;

const full: Record<EndpointName, Fn> = {
  GetBranch: getBranch,
  ListMembers: listMembers,
  ListPaymentProviders: listPaymentProviders,
  GetPaymentProvider: getPaymentProvider,
};

const responder = createResponder(config.tables.keys);
useTransport(documentClient, responder);
const bareClient = createDocumentClient(config.dynamodb);
useTransport(bareClient, responder);

/** The baseline: the same SDK calls with the same inputs, through the bare client (bench/lib/bare.ts). */
const bareRequest = createBareRequest(bareClient, config.tables);
const bare =
  (endpoint: (typeof ENDPOINTS)[number]): Fn =>
  async (event) => {
    const { rawPath, requestContext } = event;
    const body = await bareRequest(
      endpoint.path,
      rawPath,
      benchKey.hash,
      requestContext.requestId,
      requestContext.http.sourceIp,
    );
    return { statusCode: 200, headers: { 'Content-Type': 'application/json' }, body };
  };

const request = (endpoint: (typeof ENDPOINTS)[number]): [ApiEvent, ApiContext] => [
  buildEvent({
    path: endpoint.path,
    routeKey: endpoint.routeKey,
    headers: { host: 'bench.example', authorization: `Bearer ${benchKey.value}`, 'user-agent': 'bench' },
    ...(endpoint.pathParameters ? { pathParameters: endpoint.pathParameters } : {}),
  }),
  buildContext() as Context as ApiContext,
];

const micros = (start: bigint): number => Number(process.hrtime.bigint() - start) / 1000;
const stats = (values: number[]) => ({ p50: round(percentile(values, 50), 2), p99: round(percentile(values, 99), 2) });

const time = async (f: () => Promise<void>) => {
  const start = process.hrtime.bigint();
  await f();
  return micros(start);
};

/** One pair: `a` and `b` run once each, `a` first when `aFirst`; their times as [a, b]. */
const timePair = async (a: () => Promise<void>, b: () => Promise<void>, aFirst: boolean): Promise<[number, number]> => {
  const t1 = await time(aFirst ? a : b);
  const t2 = await time(aFirst ? b : a);
  return aFirst ? [t1, t2] : [t2, t1];
};

/**
 * Runs `a` and `b` once each per iteration, in alternating order, and keeps both times and their
 * difference. Stops after `iterations` measured pairs or `maxSeconds`, whichever comes first.
 */
const paired = async (
  a: () => Promise<void>,
  b: () => Promise<void>,
  { warmup = WARMUP, iterations = ITERATIONS, maxSeconds = MAX_SECONDS } = {},
) => {
  const aTimes: number[] = [];
  const bTimes: number[] = [];
  const diffs: number[] = [];
  let deadline = Number.POSITIVE_INFINITY;
  for (let i = 0; i < warmup + iterations && performance.now() < deadline; i += 1) {
    if (i === warmup) deadline = performance.now() + maxSeconds * 1000;
    const [ta, tb] = await timePair(a, b, i % 2 === 0);
    if (i < warmup) continue;
    aTimes.push(ta);
    bTimes.push(tb);
    diffs.push(ta - tb);
  }
  return { pairs: diffs.length, a: stats(aTimes), b: stats(bTimes), diff: stats(diffs) };
};

/**
 * Invokes `fn` with a fresh event and context (built outside the timed part) and checks for a 200.
 * With `counted`, the response must carry the limiter's remaining count: without it the counter
 * call failed and the request took the fail-open path, which the bare baseline does not pay for.
 */
const invoker = (fn: Fn, endpoint: (typeof ENDPOINTS)[number], counted = false) => {
  let next = request(endpoint);
  return async () => {
    const [event, context] = next;
    const response = await fn(event, context);
    next = request(endpoint);
    if (response.statusCode !== 200)
      throw new Error(`${endpoint.name} answered ${response.statusCode}: ${response.body}`);
    if (counted && !response.headers?.RateLimit) {
      throw new Error(`${endpoint.name} took the rate limiter's fail-open path: the bench measures an error path`);
    }
  };
};

/** The bench is void if any call of any request went down an error path (fail open, usage not stored). */
const assertAnswered = () => {
  if (responder.unanswered.length > 0) {
    throw new Error(`The bench responder could not answer ${[...new Set(responder.unanswered)].join(', ')}`);
  }
};

const getBranchEndpoint = ENDPOINTS.find((one) => one.name === 'GetBranch')!;
const fresh = await paired(
  invoker(full.GetBranch, getBranchEndpoint, true),
  invoker(bare(getBranchEndpoint), getBranchEndpoint),
  FRESH_RUN,
);
assertAnswered();

/** The overhead's p50 per block of TIER_UP_BLOCK pairs: each endpoint in turn, each pair in alternating order. */
const tierUpBlocks: number[] = [];
{
  const sides = ENDPOINTS.map((endpoint): [full: () => Promise<void>, bare: () => Promise<void>] => [
    invoker(full[endpoint.name], endpoint, true),
    invoker(bare(endpoint), endpoint),
  ]);
  let block: number[] = [];
  for (let i = 0; i < TIER_UP_PAIRS; i += 1) {
    const [fullSide, bareSide] = sides[i % sides.length]!;
    const [tFull, tBare] = await timePair(fullSide, bareSide, Math.floor(i / sides.length) % 2 === 0);
    block.push(tFull - tBare);
    if (block.length === TIER_UP_BLOCK) {
      tierUpBlocks.push(round(percentile(block, 50), 1));
      block = [];
    }
  }
}
assertAnswered();

const results = [];
for (const endpoint of ENDPOINTS) {
  const { pairs, a, b, diff } = await paired(
    invoker(full[endpoint.name], endpoint, true),
    invoker(bare(endpoint), endpoint),
  );
  assertAnswered();
  results.push({ endpoint: endpoint.name, pairs, full: a, bare: b, overhead: diff });
}

/*
 * Where the overhead goes (docs/performance.md "Where the µs go"), for information:
 * 1. GetBranch built up one layer at a time (bench/lib/layers.ts), each step against the one below.
 * 2. What an abort signal and a timer per call cost (DynamoRepository.run passed them until the SDK's
 *    own timeouts became the bound, docs/reliability.md "Deadlines"), over the same call without:
 *    most of it is the SDK's own handling of the signal.
 */
const measureLayers = async () => {
  const layers = [];
  let below: Fn = bare(getBranchEndpoint);
  for (const layer of createLayers(full.GetBranch)) {
    const step = await paired(invoker(layer.fn, getBranchEndpoint), invoker(below, getBranchEndpoint), LAYER_RUN);
    assertAnswered();
    layers.push({ layer: layer.name, pairs: step.pairs, extra: step.diff });
    below = layer.fn;
  }
  return layers;
};

const getBranchCommand = () =>
  new GetCommand({ TableName: config.tables.branchData, Key: { branch_id: 'br_demo', sk: 'BRANCH' } });
const plainCall = async () => {
  await bareClient.send(getBranchCommand());
};
const signalCall = async () => {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), config.dynamodb.deadlineMs);
  try {
    await bareClient.send(getBranchCommand(), { abortSignal: controller.signal });
  } finally {
    clearTimeout(timer);
  }
};
const measureBreakdown = async () => {
  const layers = await measureLayers();
  const signal = await paired(signalCall, plainCall, CALL_RUN);
  return { layers, signalPerCall: { pairs: signal.pairs, extra: signal.diff } };
};
/** The breakdown is asked of one process only (bench/lib/overhead-runs.ts). */
const breakdown = process.env.BENCH_OVERHEAD_BREAKDOWN === '0' ? undefined : await measureBreakdown();

assertAnswered();
process.stdout.write(
  `${JSON.stringify({
    iterations: ITERATIONS,
    warmup: WARMUP,
    fresh: {
      endpoint: getBranchEndpoint.name,
      warmup: FRESH_RUN.warmup,
      pairs: fresh.pairs,
      full: fresh.a,
      bare: fresh.b,
      overhead: fresh.diff,
    },
    tierUp: { pairs: TIER_UP_PAIRS, blockPairs: TIER_UP_BLOCK, blockP50: tierUpBlocks },
    results,
    breakdown,
    calls: responder.calls,
  })}\n`,
);
