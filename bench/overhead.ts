/**
 * Own overhead per request, in-process: the real handler modules (Middy stack, middlewares,
 * handler, response) and their shared runtime, with the DynamoDB transport replaced by the
 * instant responder (bench/lib/responder.ts), against a bare function that makes the same SDK
 * calls through an identically configured client and the same responder. Runs as a child of
 * bench/run.ts with a Lambda-like environment (see LAMBDA_ENV there); prints one JSON line.
 *
 * Each iteration runs both, in alternating order, and keeps the difference of the pair, so
 * drift in machine load affects both sides of a pair alike.
 */
import type { Context } from 'aws-lambda';
import { handler as getBranch } from '../functions/get-branch';
import { handler as getPaymentProvider } from '../functions/get-payment-provider';
import { handler as listMembers } from '../functions/list-members';
import { handler as listPaymentProviders } from '../functions/list-payment-providers';
import { buildContext, buildEvent } from '../lib/local/events';
import { createDocumentClient } from '../shared/dynamodb';
import type { ApiEvent, ApiResponse } from '../shared/http/response';
import type { ApiContext } from '../shared/middlewares';
import { config, documentClient } from '../shared/runtime';
import { createBareRequest } from './lib/bare';
import { benchKey, ENDPOINTS, type EndpointName } from './lib/fixtures';
import { createResponder, useResponder } from './lib/responder';
import { percentile, round } from './lib/stats';

const WARMUP = Number(process.env.BENCH_OVERHEAD_WARMUP ?? 800);
const ITERATIONS = Number(process.env.BENCH_OVERHEAD_ITERATIONS ?? 4000);
/** Per endpoint, measured pairs stop here even if ITERATIONS were not reached (a busy machine). */
const MAX_SECONDS = Number(process.env.BENCH_OVERHEAD_SECONDS ?? 8);

type Fn = (event: ApiEvent, context: ApiContext) => Promise<ApiResponse>;

const full: Record<EndpointName, Fn> = {
  GetBranch: getBranch,
  ListMembers: listMembers,
  ListPaymentProviders: listPaymentProviders,
  GetPaymentProvider: getPaymentProvider,
};

const responder = createResponder(config.tables.keys);
useResponder(documentClient, responder);
const bareClient = createDocumentClient(config.dynamodb);
useResponder(bareClient, responder);

/** The baseline: the same SDK calls with the same inputs, through the bare client (bench/lib/bare.ts). */
const bareRequest = createBareRequest(bareClient, config.tables);
const bare =
  (endpoint: (typeof ENDPOINTS)[number]): Fn =>
  async (event) => {
    const body = await bareRequest(endpoint.path, event.rawPath, benchKey.hash, event.requestContext.requestId);
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

const micros = (start: bigint, end: bigint): number => Number(end - start) / 1000;

const measure = async (endpoint: (typeof ENDPOINTS)[number]) => {
  const fn = full[endpoint.name];
  const baseline = bare(endpoint);
  const time = async (f: Fn): Promise<number> => {
    const [event, context] = request(endpoint);
    const start = process.hrtime.bigint();
    const response = await f(event, context);
    const elapsed = micros(start, process.hrtime.bigint());
    if (response.statusCode !== 200)
      throw new Error(`${endpoint.name} answered ${response.statusCode}: ${response.body}`);
    return elapsed;
  };
  const fullTimes: number[] = [];
  const bareTimes: number[] = [];
  const diffs: number[] = [];
  let deadline = Number.POSITIVE_INFINITY;
  for (let i = 0; i < WARMUP + ITERATIONS && performance.now() < deadline; i += 1) {
    if (i === WARMUP) deadline = performance.now() + MAX_SECONDS * 1000;
    let f: number;
    let b: number;
    if (i % 2 === 0) {
      f = await time(fn);
      b = await time(baseline);
    } else {
      b = await time(baseline);
      f = await time(fn);
    }
    if (i < WARMUP) continue;
    fullTimes.push(f);
    bareTimes.push(b);
    diffs.push(f - b);
  }
  const stats = (values: number[]) => ({
    p50: round(percentile(values, 50), 2),
    p99: round(percentile(values, 99), 2),
  });
  return {
    endpoint: endpoint.name,
    pairs: diffs.length,
    full: stats(fullTimes),
    bare: stats(bareTimes),
    overhead: stats(diffs),
  };
};

const results = [];
for (const endpoint of ENDPOINTS) results.push(await measure(endpoint));
process.stdout.write(
  `${JSON.stringify({ iterations: ITERATIONS, warmup: WARMUP, results, calls: responder.calls })}\n`,
);
