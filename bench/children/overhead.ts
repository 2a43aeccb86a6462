/**
 * Own overhead per request, run as a bundle built like the functions (bench/parts/overhead.ts):
 * each endpoint's real handler against the bare calls (bench/lib/bare.ts), both on a DynamoDB
 * that answers at once (bench/lib/responder.ts), one of each per pair in alternating order, the
 * figure being the per-pair difference. First a fresh container (GetBranch, the first requests
 * of this process), then, after every endpoint round robin, each endpoint warm. Writes its
 * figures as JSON to BENCH_RESULT_FILE.
 */
import { writeFileSync } from 'node:fs';
import type { Context } from 'aws-lambda';
import { buildContext, buildEvent } from '../../lib/local/events';
import type { ApiEvent, ApiResponse } from '../../shared/api/http/response';
import type { RouteId } from '../../shared/api/routes';
import { createDocumentClient } from '../../shared/data/dynamodb';
import { readDynamoDbSettings, readTableNames } from '../../shared/config/env';
import { createBareRequest } from '../lib/bare';
import { benchKey, ENDPOINTS, type Endpoint } from '../lib/fixtures';
import { startResponder } from '../lib/responder';
import { percentile } from '../../shared/domain/percentile';
import { round } from '../lib/stats';

const FRESH_PAIRS = 1_000;
/** Requests round robin before the warm figures: what warms the code is a count of calls. */
const ROUND_ROBIN_PAIRS = 4_000;
/** Each endpoint warm: so many pairs, or so many seconds on a busy machine. */
const WARM = { pairs: 1_000, seconds: 5 };

type Fn = (event: ApiEvent, context: Context) => Promise<ApiResponse>;

const tables = readTableNames(process.env);
const responder = await startResponder(tables.keys);
// Before the handlers load: their runtime reads the environment once, at module load.
process.env.DYNAMODB_ENDPOINT = responder.endpoint;
const modules: Record<RouteId, { handler: unknown }> = {
  GetBranch: await import('../../functions/get-branch'),
  ListMembers: await import('../../functions/list-members'),
  ListPaymentProviders: await import('../../functions/list-payment-providers'),
  GetPaymentProvider: await import('../../functions/get-payment-provider'),
};
const bareRequest = createBareRequest(createDocumentClient(readDynamoDbSettings(process.env)), tables);

const request = (endpoint: Endpoint): [ApiEvent, Context] => [
  buildEvent({
    path: endpoint.path,
    routeKey: endpoint.routeKey,
    headers: { host: 'bench.example', authorization: `Bearer ${benchKey.value}`, 'user-agent': 'bench' },
    ...(endpoint.pathParameters ? { pathParameters: endpoint.pathParameters } : {}),
  }),
  buildContext(),
];

/** The real function; anything but a 200 counted by the limiter means an error path was measured. */
const full = async (endpoint: Endpoint, [event, context]: [ApiEvent, Context]) => {
  const response = await (modules[endpoint.name].handler as Fn)(event, context);
  if (response.statusCode !== 200 || response.headers?.RateLimit === undefined) {
    throw new Error(
      `${endpoint.name} answered ${response.statusCode} ${JSON.stringify(response.headers)}: ${response.body}`,
    );
  }
};
const bare = async (endpoint: Endpoint, [event]: [ApiEvent, Context]) => {
  const { rawPath, requestContext } = event;
  await bareRequest(endpoint.path, rawPath, benchKey.hash, requestContext.requestId, requestContext.http.sourceIp);
};

/** One pair, events built outside the timed part: full − bare, in µs. */
const pair = async (endpoint: Endpoint, fullFirst: boolean): Promise<number> => {
  const fullRequest = request(endpoint);
  const bareRequestArgs = request(endpoint);
  const time = async (run: () => Promise<void>) => {
    const start = process.hrtime.bigint();
    await run();
    return Number(process.hrtime.bigint() - start) / 1000;
  };
  const runFull = () => time(() => full(endpoint, fullRequest));
  const runBare = () => time(() => bare(endpoint, bareRequestArgs));
  if (fullFirst) {
    const tFull = await runFull();
    return tFull - (await runBare());
  }
  const tBare = await runBare();
  return (await runFull()) - tBare;
};

const figures = (diffs: number[]) => ({
  pairs: diffs.length,
  p50: round(percentile(diffs, 50)!, 1),
  p99: round(percentile(diffs, 99)!, 1),
});

const getBranch = ENDPOINTS.find((one) => one.name === 'GetBranch')!;
const fresh: number[] = [];
for (let i = 0; i < FRESH_PAIRS; i += 1) fresh.push(await pair(getBranch, i % 2 === 0));

for (let i = 0; i < ROUND_ROBIN_PAIRS; i += 1) {
  await pair(ENDPOINTS[i % ENDPOINTS.length]!, Math.floor(i / ENDPOINTS.length) % 2 === 0);
}

const warm: Record<string, ReturnType<typeof figures>> = {};
for (const endpoint of ENDPOINTS) {
  const diffs: number[] = [];
  const end = performance.now() + WARM.seconds * 1000;
  for (let i = 0; i < WARM.pairs && performance.now() < end; i += 1) diffs.push(await pair(endpoint, i % 2 === 0));
  warm[endpoint.name] = figures(diffs);
}

await responder.close();
if (responder.unanswered.length > 0) throw new Error(`DynamoDB calls not answered: ${responder.unanswered}`);
writeFileSync(
  process.env.BENCH_RESULT_FILE!,
  JSON.stringify({
    fresh: { endpoint: getBranch.name, ...figures(fresh) },
    warmAfter: FRESH_PAIRS + ROUND_ROBIN_PAIRS,
    warm,
  }),
);
