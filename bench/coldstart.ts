/**
 * Cold-start proxy: each function's bundle (built with the stack's esbuild options), its size,
 * and the median time to import it in a fresh Node process with a Lambda-like environment, as a
 * ratio to importing a bundle of only the SDK clients and Middy built the same way. Also checks
 * that module load does no I/O: with DYNAMODB_ENDPOINT on a closed port every bundle must still
 * import, open no socket and leave nothing pending.
 */
import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { BUNDLE_BUDGET_BYTES } from '../lib/infra/api-function';
import { buildEvent } from '../lib/local/events';
import { fallbackEntry, routes } from '../shared/api/routes';
import { buildBundle, type Bundle } from './lib/bundle';
import { startChild } from './lib/child';
import { median, round } from './lib/stats';

/** What Lambda gives a function of the stack (credentials in the environment, tables, Powertools, NODE_OPTIONS). */
export const LAMBDA_ENV: Record<string, string> = {
  AWS_REGION: 'eu-west-1',
  AWS_DEFAULT_REGION: 'eu-west-1',
  AWS_ACCESS_KEY_ID: 'AKIDBENCHMARK00000000',
  AWS_SECRET_ACCESS_KEY: 'bench-secret-access-key',
  AWS_SESSION_TOKEN: 'bench-session-token',
  AWS_LAMBDA_FUNCTION_NAME: 'branch-api-bench',
  AWS_LAMBDA_FUNCTION_MEMORY_SIZE: '512',
  AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
  AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x',
  KEYS_TABLE: 'bench-keys',
  USAGE_TABLE: 'bench-usage',
  BRANCH_DATA_TABLE: 'bench-branch-data',
  RATE_LIMITS_TABLE: 'bench-rate-limits',
  USAGE_RETENTION_DAYS: '90',
  POWERTOOLS_SERVICE_NAME: 'branch-api',
  POWERTOOLS_METRICS_NAMESPACE: 'BranchApi',
  POWERTOOLS_LOG_LEVEL: 'INFO',
  // Deployed functions have the key events' bus (lib/infra/key-events.ts).
  KEY_EVENT_BUS_NAME: 'bench-key-events',
};

/** Node options the stack sets on every function (lib/infra/api-function.ts): measured as a separate figure. */
export const DEPLOYED_NODE_OPTIONS = '--enable-source-maps';

/** Imports the module named by BENCH_IMPORT_URL and reports the time, sockets opened and what is left pending. */
const IMPORT_SCRIPT = `
import { subscribe } from 'node:diagnostics_channel';
let sockets = 0;
subscribe('net.client.socket', () => { sockets += 1; });
const start = performance.now();
await import(process.env.BENCH_IMPORT_URL);
const ms = performance.now() - start;
process.stdout.write(JSON.stringify({ ms, sockets, pending: process.getActiveResourcesInfo() }));
`;

/**
 * Cold start = import + first request. Imports the bundle, then answers one request and then a
 * second: the first carries whatever the import left for later (credentials, endpoint, the
 * connection, code run for the first time), the second is the same request warm.
 */
const FIRST_REQUEST_SCRIPT = `
const context = () => ({
  functionName: 'branch-api-bench', functionVersion: '$LATEST', memoryLimitInMB: '512',
  invokedFunctionArn: 'arn:aws:lambda:eu-west-1:000000000000:function:branch-api-bench',
  awsRequestId: crypto.randomUUID(), logGroupName: '/aws/lambda/branch-api-bench', logStreamName: 'bench',
  callbackWaitsForEmptyEventLoop: false, getRemainingTimeInMillis: () => 10000,
});
const event = JSON.parse(process.env.BENCH_EVENT);
const call = () => handler({ ...event, requestContext: { ...event.requestContext, requestId: crypto.randomUUID() } }, context());
const start = performance.now();
const { handler } = await import(process.env.BENCH_IMPORT_URL);
const imported = performance.now();
const first = await call();
const answered = performance.now();
const second = await call();
const again = performance.now();
process.stdout.write(JSON.stringify({
  importMs: imported - start, firstMs: answered - imported, secondMs: again - answered,
  statuses: [first.statusCode, second.statusCode],
}));
`;

interface FirstRequestRun {
  importMs: number;
  firstMs: number;
  secondMs: number;
  statuses: number[];
}

interface DynamoReady {
  endpoint: string;
  key: string;
  tables: { keys: string; usage: string; branchData: string; rateLimits: string };
}

/** Medians of import, first and second request of `bundle` (GetBranch) against dynalite in its own process. */
const firstRequestTimes = async (bundle: Bundle, runs: number) => {
  const dynamo = await startChild<DynamoReady>('bench/children/dynamo.ts', {});
  try {
    const { endpoint, key, tables } = dynamo.ready;
    const env = {
      ...LAMBDA_ENV,
      DYNAMODB_ENDPOINT: endpoint,
      KEYS_TABLE: tables.keys,
      USAGE_TABLE: tables.usage,
      BRANCH_DATA_TABLE: tables.branchData,
      RATE_LIMITS_TABLE: tables.rateLimits,
      BENCH_IMPORT_URL: pathToFileURL(bundle.file).href,
      BENCH_EVENT: JSON.stringify(
        buildEvent({ path: '/v1/branch', routeKey: 'GET /v1/branch', headers: { authorization: `Bearer ${key}` } }),
      ),
    };
    const samples: FirstRequestRun[] = [];
    for (let i = 0; i < runs; i += 1) {
      const child = spawnSync(process.execPath, ['--input-type=module', '-e', FIRST_REQUEST_SCRIPT], {
        env: { PATH: process.env.PATH ?? '', ...env },
        encoding: 'utf8',
        timeout: 20_000,
      });
      if (child.status !== 0)
        throw new Error(`first request of ${bundle.name} failed (${child.status}): ${child.stderr}`);
      const run = JSON.parse(child.stdout.slice(child.stdout.lastIndexOf('{"importMs"'))) as FirstRequestRun;
      // A cold start that answers an error measured an error path.
      if (run.statuses.some((status) => status !== 200)) throw new Error(`${bundle.name} answered ${run.statuses}`);
      samples.push(run);
    }
    const medianOf = (pick: (run: FirstRequestRun) => number) => round(median(samples.map(pick)), 1);
    return {
      function: bundle.name,
      runs,
      importMsMedian: medianOf((run) => run.importMs),
      firstRequestMsMedian: medianOf((run) => run.firstMs),
      secondRequestMsMedian: medianOf((run) => run.secondMs),
      coldStartMsMedian: medianOf((run) => run.importMs + run.firstMs),
    };
  } finally {
    await dynamo.stop();
  }
};

interface ImportRun {
  ms: number;
  sockets: number;
  pending: string[];
}

const importOnce = (bundle: Bundle, env: Record<string, string>, nodeOptions = ''): ImportRun => {
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', IMPORT_SCRIPT], {
    env: {
      PATH: process.env.PATH ?? '',
      NODE_OPTIONS: nodeOptions,
      ...env,
      BENCH_IMPORT_URL: pathToFileURL(bundle.file).href,
    },
    encoding: 'utf8',
    timeout: 20_000,
  });
  if (child.status !== 0) throw new Error(`importing ${bundle.name} failed (${child.status}): ${child.stderr}`);
  return JSON.parse(child.stdout) as ImportRun;
};

const closedPort = async (): Promise<string> => {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
};

/**
 * What module load must not leave behind: sockets, DNS look-ups, file operations, timers. The
 * stdio pipes (PipeWrap, TTYWrap) are the child's own stdout/stderr, opened by the logger.
 */
const IO_AT_LOAD = /TCP|UDP|GetAddrInfo|GetNameInfo|FSReq|FileHandle|Timeout|Immediate|HTTP|TLS|Process|Signal/i;

/** Median import times, interleaved so that load on the machine falls on every bundle alike. */
const importTimes = (bundles: Bundle[], runs: number, nodeOptions = ''): Map<string, number> => {
  const times = new Map<string, number[]>(bundles.map((bundle) => [bundle.name, []]));
  for (let i = 0; i < runs; i += 1) {
    for (const bundle of bundles) times.get(bundle.name)!.push(importOnce(bundle, LAMBDA_ENV, nodeOptions).ms);
  }
  return new Map([...times].map(([name, values]) => [name, median(values)]));
};

export const runColdStart = async (outdir: string, runs = Number(process.env.BENCH_IMPORT_RUNS ?? 15)) => {
  const entries = [
    ...routes.map((route) => ({ name: route.id, entry: route.entry })),
    { name: 'Fallback', entry: fallbackEntry },
  ];
  const bundles: Bundle[] = [];
  for (const { name, entry } of entries) bundles.push(await buildBundle(name, entry, outdir));
  const baseline = await buildBundle('SdkAndMiddy', 'bench/cold/sdk-and-middy.ts', outdir);

  const plain = importTimes([baseline, ...bundles], runs);
  const baselineMs = plain.get(baseline.name)!;
  // As deployed, the stack's NODE_OPTIONS make Node read and parse the source map at load.
  const first = bundles[0]!;
  const deployed = importTimes([baseline, first], Math.min(runs, 11), DEPLOYED_NODE_OPTIONS);

  const firstRequest = await firstRequestTimes(first, Math.min(runs, 11));

  const endpoint = await closedPort();
  const functions = bundles.map((bundle) => {
    const importMs = plain.get(bundle.name)!;
    const probe = importOnce(bundle, { ...LAMBDA_ENV, DYNAMODB_ENDPOINT: endpoint });
    const ioAtLoad = probe.pending.filter((name) => IO_AT_LOAD.test(name));
    return {
      name: bundle.name,
      bytes: bundle.bytes,
      kb: round(bundle.bytes / 1024, 1),
      importMsMedian: round(importMs, 1),
      importRatio: round(importMs / baselineMs, 2),
      noIoAtLoad: probe.sockets === 0 && ioAtLoad.length === 0,
      socketsAtLoad: probe.sockets,
      pendingAtLoad: probe.pending,
    };
  });
  return {
    runs,
    budgetBytes: BUNDLE_BUDGET_BYTES,
    baseline: {
      name: baseline.name,
      bytes: baseline.bytes,
      kb: round(baseline.bytes / 1024, 1),
      importMsMedian: round(baselineMs, 1),
    },
    functions,
    firstRequest,
    deployedNodeOptions: {
      nodeOptions: DEPLOYED_NODE_OPTIONS,
      runs: Math.min(runs, 11),
      function: first.name,
      importMsMedian: round(deployed.get(first.name)!, 1),
      baselineMsMedian: round(deployed.get(baseline.name)!, 1),
    },
  };
};
