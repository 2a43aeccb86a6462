/**
 * Verifies a synthesized assembly as it will be deployed. First the template's checks (the stack's
 * nag pack, lib/verify/template-checks.ts); then it runs on the embedded DynamoDB: every function
 * from its asset code, handler string and resolved environment, behind the template's routes,
 * stream consumers fed from the tables their mappings name, through a scenario that touches every
 * route, documented error and failure path; what it saw is judged by lib/verify/observed.ts
 * (docs/deploy.md "Verify the assembly").
 */
import { randomUUID } from 'node:crypto';
import type { DynamoDBBatchResponse, DynamoDBRecord } from 'aws-lambda';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { API_TABLES, TABLE_ENV } from '../../shared/data/tables';
import { buildEvent } from '../local/events';
import { startEmbeddedDynamo } from '../local/dynamo';
import { readSeedFile } from '../operator/seed';
import { DEMO_SEED_FILE } from '../project-paths';
import { readAssembly, LOCAL_REGION, type Assembly, type TemplateRoute } from './assembly';
import { startEventBusStandIn } from './event-bus';
import { startFunction, type EmittedMetric, type FunctionHost } from './function-host';
import { checkAlarms, checkIam, type Defect, type IamUse } from './observed';
import { runOperatorProof, type OperatorProofInput, type OperatorProofReport } from './operator-proof';
import { startRecordingProxy } from './recording-proxy';
import * as scenario from './scenario';
import { checkTemplate, TEMPLATE_CHECK_COUNT } from './template-checks';

export interface VerifyReport {
  stack: string;
  defects: Defect[];
  functions: number;
  invocations: number;
  /** DynamoDB operations observed, per function: `dynamodb:Query on <table> [index]` → count. */
  operations: Record<string, Record<string, number>>;
  alarms: number;
  /** Checks of the template run before the functions (lib/verify/template-checks.ts). */
  checks: number;
  /** The operator tooling run on the stack outputs alone (lib/verify/operator-proof.ts). */
  operatorProof?: Omit<OperatorProofReport, 'defects'>;
  /** What the run saw, which `checkObserved` reads: each function's calls, the metrics emitted. */
  observed: { uses: IamUse[]; metrics: EmittedMetric[] };
  elapsedMs: number;
}

/**
 * What the run saw, checked against the template: each call against its function's role, each
 * alarm against the metrics emitted. Pure: a changed template is checked against the same
 * observations without another run.
 */
export const checkObserved = (assembly: Assembly, observed: VerifyReport['observed']): Defect[] => [
  ...checkIam(assembly, observed.uses),
  ...checkAlarms(assembly.alarms, observed.metrics),
];

const message = (error: unknown) => (error instanceof Error ? `${error.name}: ${error.message}` : String(error));

const localClient = (endpoint: string) =>
  new DynamoDBClient({
    endpoint,
    region: LOCAL_REGION,
    credentials: { accessKeyId: 'verify', secretAccessKey: 'verify' },
  });

/** Tables with a stream (name → key attribute names), whose changes the recording proxies capture. */
const streamedTables = ({ tables }: Assembly) =>
  new Map(tables.filter((table) => table.streamArn).map((table) => [table.name, table.keyAttributes]));

/** One verify run: what it runs and what it found. */
const startRun = async (assembly: Assembly, dynamoEndpoint: string) => ({
  assembly,
  hosts: new Map<string, FunctionHost>(),
  defects: checkTemplate(assembly),
  /** Request id → the template route that served it (not `$default`). */
  served: new Map<string, TemplateRoute>(),
  /** Signs secret scanning reports with the run's own key pair. */
  signed: scenario.useOwnSigningKey(assembly.functions),
  /** The scenario's own writes (its keys, as the operator tooling leaves them), fed to the streams too. */
  scenario: await startRecordingProxy(dynamoEndpoint, streamedTables(assembly)),
  /** Where the functions put key events. */
  eventBus: await startEventBusStandIn(),
});
type Run = Awaited<ReturnType<typeof startRun>>;

/** Every route with every documented error, then each successful call again with its writes failing. */
const playScenario = async (run: Run) => {
  const { assembly, hosts, defects, served } = run;
  const tables = scenario.tableNamesOf(assembly);
  if (!tables) {
    const names = API_TABLES.map((name) => TABLE_ENV[name]).join(', ');
    return defects.push({
      resource: assembly.stack,
      reason: `no function is given every API table variable (${names})`,
    });
  }
  const client = localClient(run.scenario.endpoint);
  const { cases, limitedKey } = await scenario
    .buildScenario(client, tables, assembly, run.signed)
    .finally(() => client.destroy());
  const match = scenario.routeMatcher(assembly.routes);
  const call = async (one: scenario.Case, note = '') => {
    const selected = match(one.method, one.path);
    if (!selected)
      return defects.push({ resource: assembly.stack, reason: `no route serves ${one.method} ${one.path}` });
    const { route, pathParameters } = selected;
    const host = hosts.get(route.functionLogicalId);
    if (!host || host.importError) return;
    const requestId = randomUUID();
    if (route.routeKey !== '$default') served.set(requestId, route);
    const headers = { host: 'verify.local', authorization: one.key && `Bearer ${one.key}`, ...one.headers };
    const event = { ...one, headers, pathParameters, stage: assembly.stageName, routeKey: route.routeKey, requestId };
    const outcome = await host.invoke(buildEvent(event));
    const result = outcome.result as { statusCode?: number; body?: string } | undefined;
    const [status, code] = [result?.statusCode, scenario.errorCodeOf(result?.body)];
    const reason = outcome.error
      ? `the function failed: ${outcome.error}`
      : status !== one.expected
        ? `answered ${status}, expected ${one.expected}`
        : one.code !== undefined && code !== one.code
          ? `answered ${status} with code ${code ?? 'none'}, expected ${one.code}`
          : undefined;
    if (reason) defects.push({ resource: host.fn.logicalId, reason: `${one.label}${note}: ${reason}` });
  };
  for (const one of cases) await call(one);
  // Failure paths: every write fails once per route; the answer must not change, and what the
  // code emits when a write fails (metrics the alarms watch) is emitted. Each function's calls in
  // turn (one invocation at a time per process, as per container), the functions side by side.
  for (const host of hosts.values()) host.proxy.failWrites = true;
  const byFunction = new Map<string, scenario.Case[]>();
  // The rate-limited key has used its one call: replayed, it would rightly be a 429.
  for (const one of cases.filter((c) => c.expected === 200 && c.key !== limitedKey)) {
    const id = match(one.method, one.path)?.route.functionLogicalId ?? '';
    byFunction.set(id, [...(byFunction.get(id) ?? []), one]);
  }
  await Promise.all(
    [...byFunction.values()].map(async (group) => {
      for (const one of group) await call(one, ' (writes failing)');
    }),
  );
  for (const host of hosts.values()) host.proxy.failWrites = false;
};

/** Redeliveries tried for a mapping without a bound (the `stream-retries` check reports it). */
const UNBOUNDED_RETRIES = 10;

/**
 * Delivers one batch as Lambda does with partial batch responses: a batch that fails is delivered
 * again from its first failed record (the whole batch after a function error, or an identifier
 * not in it), up to the mapping's retry attempts. A consumer fails only if that does not get it
 * through: a write that timed out on a busy machine is retried, as it would be on AWS.
 */
const deliver = async (consumer: FunctionHost, batch: DynamoDBRecord[], retries: number) => {
  let remaining = batch;
  for (let attempt = 0; ; attempt += 1) {
    const { error, result } = await consumer.invoke({ Records: remaining });
    const failures = (result as DynamoDBBatchResponse | undefined)?.batchItemFailures ?? [];
    if (!error && failures.length === 0) return undefined;
    if (attempt >= retries)
      return `${error ?? `${failures.length} item failure(s)`}, still after ${retries} redeliveries`;
    const first = error
      ? 0
      : remaining.findIndex((record) => record.dynamodb?.SequenceNumber === failures[0]!.itemIdentifier);
    remaining = remaining.slice(Math.max(first, 0));
  }
};

/** Each stream consumer gets what was written to its table, as stream records; returns the streams read. */
const feedStreams = async ({ assembly, hosts, defects, scenario: own }: Run) => {
  const proxies = [own, ...[...hosts.values()].map((host) => host.proxy)];
  await Promise.all(proxies.map((proxy) => proxy.settled()));
  const changes = proxies.flatMap((proxy) => proxy.writes).sort((a, b) => (a.at < b.at ? -1 : 1));
  const streams = new Map<string, string[]>();
  for (const mapping of assembly.mappings) {
    const table = assembly.tables.find((candidate) => candidate.logicalId === mapping.tableLogicalId);
    if (!table) continue;
    const id = mapping.functionLogicalId;
    streams.set(id, [...(streams.get(id) ?? []), table.streamArn ?? `${table.arn}/stream/*`]);
    const consumer = hosts.get(id);
    if (!consumer || consumer.importError) continue;
    const records = scenario.streamRecordsOf(changes, table, mapping.filters);
    if (records.length === 0) {
      defects.push({
        resource: mapping.logicalId,
        reason: `the scenario wrote nothing to table ${table.logicalId} that its filter lets through, so its stream consumer never ran`,
      });
      continue;
    }
    const batchSize = Math.max(1, mapping.batchSize);
    // Its failure path first: the first batch while its writes are throttled (whatever it answers,
    // Lambda retries), as an at-least-once stream delivers it.
    consumer.proxy.failWrites = true;
    await consumer.invoke({ Records: records.slice(0, batchSize) });
    consumer.proxy.failWrites = false;
    // Then every batch, and the first one once more after it was applied: a redelivery, which a
    // consumer must recognise (a watermark read) and not count twice.
    const batches = Array.from({ length: Math.ceil(records.length / batchSize) }, (_, i) =>
      records.slice(i * batchSize, (i + 1) * batchSize),
    );
    for (const batch of [...batches, batches[0]!]) {
      const failure = await deliver(consumer, batch, mapping.retryAttempts ?? UNBOUNDED_RETRIES);
      if (failure) defects.push({ resource: id, reason: `a stream batch failed: ${failure}` });
    }
  }
  return streams;
};

/**
 * Each route reaches the code written for it: the usage record of a call names the route template
 * its handler serves (shared/api/routes.ts), which must be the route API Gateway matched.
 */
const checkRouteWiring = ({ hosts, defects, served }: Run) => {
  const reported = new Set<string>();
  for (const write of [...hosts.values()].flatMap((host) => host.proxy.writes)) {
    const image = write.newImage;
    const route = served.get(image?.request_id?.S ?? '');
    const recorded = image?.route?.S;
    if (!route || recorded === undefined || reported.has(route.logicalId)) continue;
    if (recorded !== route.routeKey && recorded !== route.routeKey.split(' ')[1]) {
      reported.add(route.logicalId);
      defects.push({
        resource: route.logicalId,
        reason: `route ${route.routeKey} reaches code that serves ${recorded} (its usage record says so)`,
      });
    }
  }
};

/** Each function's DynamoDB operations, counted by action, table and index. */
const operationCounts = ({ assembly, hosts }: Run): VerifyReport['operations'] =>
  Object.fromEntries(
    [...hosts.values()].map((host) => {
      const counts: Record<string, number> = {};
      for (const { action, table, index } of host.proxy.operations) {
        const name = `${action} ${assembly.tables.find((t) => t.name === table)?.logicalId ?? table}${index ? `/${index}` : ''}`;
        counts[name] = (counts[name] ?? 0) + 1;
      }
      return [host.fn.logicalId, counts];
    }),
  );

/** What the run saw: each function's calls, the streams its mappings read, the metrics. */
const observedOf = ({ hosts }: Run, fed: Map<string, string[]> | undefined): VerifyReport['observed'] => ({
  uses: [...hosts.values()].map(({ fn, proxy }) => ({
    functionLogicalId: fn.logicalId,
    roleLogicalId: fn.roleLogicalId,
    operations: proxy.operations,
    streams: fed?.get(fn.logicalId) ?? [],
  })),
  metrics: [...hosts.values()].flatMap((host) => host.metrics),
});

/** Runs one phase; one that throws (a template the scenario can't run on) becomes a defect, not a crash. */
const phase = <T>(run: Run, name: string, work: () => Promise<T>): Promise<T | undefined> =>
  work().catch((error: unknown) => {
    run.defects.push({
      resource: run.assembly.stack,
      reason: `${name} could not run on this template: ${message(error)}`,
    });
    return undefined;
  });

/** The template's tables on the embedded DynamoDB, each with its own key schema and indexes. */
export const createTemplateTables = async (raw: DynamoDBClient, assembly: Assembly): Promise<void> => {
  for (const { name, properties } of assembly.tables) {
    const { KeySchema, AttributeDefinitions, GlobalSecondaryIndexes } = properties;
    const input = { TableName: name, KeySchema, AttributeDefinitions, GlobalSecondaryIndexes };
    await raw.send(new CreateTableCommand({ ...input, BillingMode: 'PAY_PER_REQUEST' }));
  }
};

const startFunctions = async ({ assembly, hosts, defects, eventBus }: Run, endpoint: string) => {
  const streamed = streamedTables(assembly);
  for (const fn of assembly.functions) {
    for (const [name, value] of Object.entries(fn.environment)) {
      const reason = `environment variable ${name} refers to something that cannot be resolved`;
      if (value === undefined) defects.push({ resource: fn.logicalId, reason });
    }
    const host = await startFunction(fn, endpoint, streamed, eventBus.endpoint);
    hosts.set(fn.logicalId, host);
    if (host.importError) defects.push({ resource: fn.logicalId, reason: `fails to load: ${host.importError}` });
  }
};

/** Scheduled functions (the daily Key Expiring run): one scheduled event each. */
const runScheduled = async ({ assembly, hosts, defects }: Run) => {
  for (const id of scenario.scheduledFunctions(assembly)) {
    const outcome = await hosts.get(id)?.invoke(scenario.scheduledEvent());
    if (outcome?.error) defects.push({ resource: id, reason: `a scheduled run failed: ${outcome.error}` });
  }
};

/**
 * @param options.operatorProof what the operator proof hands over and enforces (the seeded defects
 * of its tests); false: no proof.
 */
export const verifyAssembly = async (
  dir: string,
  stackName?: string,
  options: { operatorProof?: Pick<OperatorProofInput, 'outputs' | 'policy'> | false } = {},
): Promise<VerifyReport> => {
  const started = performance.now();
  let assembly: Assembly;
  try {
    assembly = readAssembly(dir, stackName);
  } catch (error) {
    // Not an assembly the verifier can read at all: one defect line, not a stack trace.
    const stack = stackName ?? dir;
    const defects = [{ resource: stack, reason: `the assembly could not be read: ${message(error)}` }];
    const none = { functions: 0, invocations: 0, operations: {}, alarms: 0, checks: 0, elapsedMs: 0 };
    return { stack, defects, ...none, observed: { uses: [], metrics: [] } };
  }
  const dynamo = await startEmbeddedDynamo();
  const raw = localClient(dynamo.endpoint);
  const run = await startRun(assembly, dynamo.endpoint);
  const { defects, hosts } = run;
  let observed: VerifyReport['observed'] = { uses: [], metrics: [] };
  let operatorProof: VerifyReport['operatorProof'];
  try {
    await phase(run, 'creating the tables', () => createTemplateTables(raw, assembly));
    await phase(run, 'starting the functions', () => startFunctions(run, dynamo.endpoint));
    await phase(run, 'the scenario', () => playScenario(run));
    await phase(run, 'the scheduled runs', () => runScheduled(run));
    const fed = await phase(run, 'the stream feed', () => feedStreams(run));
    await phase(run, 'the route wiring check', async () => checkRouteWiring(run));
    observed = observedOf(run, fed);
    await phase(run, 'the checks of what it saw', async () => defects.push(...checkObserved(assembly, observed)));
    if (options.operatorProof !== false) {
      // The operator tooling on the stack outputs alone, on the scenario's branch (lib/verify/operator-proof.ts).
      const proof = await phase(run, 'the operator proof', async () =>
        runOperatorProof({
          assembly,
          dynamoEndpoint: dynamo.endpoint,
          branchId: (await readSeedFile(DEMO_SEED_FILE)).branches[0]!.id,
          ...(options.operatorProof || {}),
        }),
      );
      if (proof) {
        const { defects: found, ...summary } = proof;
        defects.push(...found);
        operatorProof = summary;
      }
    }
  } finally {
    // Every function process and every proxied call ends before the embedded DynamoDB closes.
    await Promise.all([...hosts.values()].map((host) => host.close()));
    await Promise.all([run.scenario.close(), run.eventBus.close()]);
    raw.destroy();
    await dynamo.close();
  }
  return {
    stack: assembly.stack,
    defects,
    functions: hosts.size,
    invocations: [...hosts.values()].reduce((sum, host) => sum + host.invocations, 0),
    operations: operationCounts(run),
    alarms: assembly.alarms.length,
    checks: TEMPLATE_CHECK_COUNT,
    observed,
    ...(operatorProof ? { operatorProof } : {}),
    elapsedMs: performance.now() - started,
  };
};
