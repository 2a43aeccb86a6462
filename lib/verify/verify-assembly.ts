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
import { readAssembly, LOCAL_REGION, type Assembly, type TemplateRoute } from './assembly';
import type { EmittedMetric } from './function-host';
import { checkAlarms, checkIam, type Defect, type IamUse } from './observed';
import { runOperatorProof, type OperatorProofInput, type OperatorProofReport } from './operator-proof';
import { readSeedFile } from '../operator/seed';
import { DEMO_SEED_FILE } from '../project-paths';
import { checkTemplate, TEMPLATE_CHECK_COUNT } from './template-checks';
import { startEventBusStandIn, type StandIn } from './event-bus';
import { startFunction, type FunctionHost } from './function-host';
import { startRecordingProxy, type RecordingProxy } from './recording-proxy';
import {
  buildScenario,
  errorCodeOf,
  routeMatcher,
  scheduledEvent,
  scheduledFunctions,
  streamRecordsOf,
  tableNamesOf,
  useOwnSigningKey,
  type Case,
  type Signer,
} from './scenario';

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
  observed: Observed;
  elapsedMs: number;
}

export interface Observed {
  uses: IamUse[];
  metrics: EmittedMetric[];
}

export interface VerifyOptions {
  /** What the operator proof hands over and enforces (the seeded defects of its tests); false: no proof. */
  operatorProof?: Pick<OperatorProofInput, 'outputs' | 'policy'> | false;
}

/**
 * What the run saw, checked against the template: each call against its function's role, each
 * alarm against the metrics emitted. Pure: a changed template is checked against the same
 * observations without another run.
 */
export const checkObserved = (assembly: Assembly, observed: Observed): Defect[] => [
  ...checkIam(assembly, observed.uses),
  ...checkAlarms(assembly.alarms, observed.metrics),
];

const message = (error: unknown) => (error instanceof Error ? `${error.name}: ${error.message}` : String(error));

interface Run {
  assembly: Assembly;
  raw: DynamoDBClient;
  hosts: Map<string, FunctionHost>;
  defects: Defect[];
  /** Request id → the template route that served it (not `$default`). */
  served: Map<string, TemplateRoute>;
  /** Signs secret scanning reports with the run's own key pair (lib/verify/scenario.ts). */
  signed: Signer;
  /** The scenario's own writes (its keys, as the operator tooling leaves them), fed to the streams too. */
  scenario: RecordingProxy;
  /** Where the functions put key events (lib/verify/event-bus.ts). */
  eventBus: StandIn;
}

const localClient = (endpoint: string) =>
  new DynamoDBClient({
    endpoint,
    region: LOCAL_REGION,
    credentials: { accessKeyId: 'verify', secretAccessKey: 'verify' },
  });

/** Tables with a stream (name → key attribute names), whose changes the recording proxies capture. */
const streamedTables = (assembly: Assembly) =>
  new Map(
    assembly.tables
      .filter((table) => table.streamArn)
      .map((table) => [
        table.name,
        ((table.properties.KeySchema ?? []) as { AttributeName: string }[]).map((key) => key.AttributeName),
      ]),
  );

/** Every route with every documented error, then each successful call again with its writes failing. */
const playScenario = async (run: Run) => {
  const { assembly, hosts, defects, served } = run;
  const tables = tableNamesOf(assembly);
  if (!tables) {
    defects.push({
      resource: assembly.stack,
      reason: `no function is given every API table variable (${API_TABLES.map((name) => TABLE_ENV[name]).join(', ')})`,
    });
    return;
  }
  const scenarioClient = localClient(run.scenario.endpoint);
  const { cases, limitedKey } = await buildScenario(scenarioClient, tables, assembly, run.signed).finally(() =>
    scenarioClient.destroy(),
  );
  const match = routeMatcher(assembly.routes);
  const call = async (one: Case, note = '') => {
    const selected = match(one.method, one.path);
    if (!selected)
      return defects.push({ resource: assembly.stack, reason: `no route serves ${one.method} ${one.path}` });
    const host = hosts.get(selected.route.functionLogicalId);
    if (!host || host.importError) return;
    const requestId = randomUUID();
    if (selected.route.routeKey !== '$default') served.set(requestId, selected.route);
    const event = buildEvent({
      method: one.method,
      path: one.path,
      stage: assembly.stageName,
      routeKey: selected.route.routeKey,
      requestId,
      headers: { host: 'verify.local', ...(one.key ? { authorization: `Bearer ${one.key}` } : {}), ...one.headers },
      ...(one.body !== undefined ? { body: one.body } : {}),
      ...(one.query ? { query: one.query } : {}),
      ...(selected.pathParameters ? { pathParameters: selected.pathParameters } : {}),
    });
    const outcome = await host.invoke({ ...event, requestContext: { ...event.requestContext } });
    const result = outcome.result as { statusCode?: number; body?: string } | undefined;
    const status = result?.statusCode;
    const at = `${one.label}${note}`;
    if (outcome.error)
      defects.push({ resource: host.fn.logicalId, reason: `${at}: the function failed: ${outcome.error}` });
    else if (status !== one.expected)
      defects.push({ resource: host.fn.logicalId, reason: `${at}: answered ${status}, expected ${one.expected}` });
    else if (one.code !== undefined && errorCodeOf(result?.body) !== one.code) {
      defects.push({
        resource: host.fn.logicalId,
        reason: `${at}: answered ${status} with code ${errorCodeOf(result?.body) ?? 'none'}, expected ${one.code}`,
      });
    }
  };
  for (const one of cases) await call(one);
  // Failure paths: every write fails once per route; the answer must not change, and what the
  // code emits when a write fails (metrics the alarms watch) is emitted. Each function's calls in
  // turn (one invocation at a time per process, as per container), the functions side by side.
  for (const host of hosts.values()) host.proxy.failWrites = true;
  const byFunction = new Map<string, Case[]>();
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
const feedStreams = async ({ assembly, hosts, defects, scenario }: Run) => {
  const proxies = [scenario, ...[...hosts.values()].map((host) => host.proxy)];
  await Promise.all(proxies.map((proxy) => proxy.settled()));
  const changes = proxies.flatMap((proxy) => proxy.writes).sort((a, b) => (a.at < b.at ? -1 : 1));
  const streams = new Map<string, string[]>();
  for (const mapping of assembly.mappings) {
    const table = assembly.tables.find((candidate) => candidate.logicalId === mapping.tableLogicalId);
    if (!table) continue;
    const id = mapping.functionLogicalId;
    streams.set(id, [...(streams.get(id) ?? []), table.streamArn ?? `${table.arn}/stream/*`]);
    const consumer = hosts.get(mapping.functionLogicalId);
    if (!consumer || consumer.importError) continue;
    const records = streamRecordsOf(changes, table, mapping.filters);
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
      if (failure) defects.push({ resource: mapping.functionLogicalId, reason: `a stream batch failed: ${failure}` });
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
    const image = write.newImage as Record<string, { S?: string }> | undefined;
    const route = served.get(image?.request_id?.S ?? '');
    const recorded = image?.route?.S;
    if (!route || recorded === undefined || reported.has(route.logicalId)) continue;
    const path = route.routeKey.split(' ')[1];
    if (recorded !== route.routeKey && recorded !== path) {
      reported.add(route.logicalId);
      defects.push({
        resource: route.logicalId,
        reason: `route ${route.routeKey} reaches code that serves ${recorded} (its usage record says so)`,
      });
    }
  }
};

const operationCounts = (assembly: Assembly, hosts: Map<string, FunctionHost>): VerifyReport['operations'] =>
  Object.fromEntries(
    [...hosts.values()].map((host) => {
      const names = host.proxy.operations.map(
        (op) =>
          `${op.action} ${assembly.tables.find((t) => t.name === op.table)?.logicalId ?? op.table}${op.index ? `/${op.index}` : ''}`,
      );
      return [
        host.fn.logicalId,
        Object.fromEntries([...new Set(names)].map((name) => [name, names.filter((n) => n === name).length])),
      ];
    }),
  );

/** What the run saw: each function's calls, the streams and destinations its mappings use, the metrics. */
const observedOf = (run: Run, fed: Awaited<ReturnType<typeof feedStreams>> | undefined): Observed => ({
  uses: [...run.hosts.values()].map((host) => ({
    functionLogicalId: host.fn.logicalId,
    ...(host.fn.roleLogicalId ? { roleLogicalId: host.fn.roleLogicalId } : {}),
    operations: host.proxy.operations,
    streams: fed?.get(host.fn.logicalId) ?? [],
  })),
  metrics: [...run.hosts.values()].flatMap((host) => host.metrics),
});

/** Not an assembly the verifier can read at all: one defect line, not a stack trace. */
const unreadable = (stack: string, error: unknown): VerifyReport => ({
  stack,
  defects: [{ resource: stack, reason: `the assembly could not be read: ${message(error)}` }],
  ...{ functions: 0, invocations: 0, operations: {}, alarms: 0, checks: 0, elapsedMs: 0 },
  observed: { uses: [], metrics: [] },
});

/** Runs one phase; one that throws (a template the scenario can't run on) becomes a defect, not a crash. */
const phase = async <T>(run: Run, name: string, work: () => Promise<T>): Promise<T | undefined> => {
  try {
    return await work();
  } catch (error) {
    run.defects.push({
      resource: run.assembly.stack,
      reason: `${name} could not run on this template: ${message(error)}`,
    });
    return undefined;
  }
};

export const verifyAssembly = async (
  dir: string,
  stackName?: string,
  options: VerifyOptions = {},
): Promise<VerifyReport> => {
  const started = performance.now();
  let assembly: Assembly;
  try {
    assembly = readAssembly(dir, stackName);
  } catch (error) {
    return unreadable(stackName ?? dir, error);
  }
  const defects: Defect[] = checkTemplate(assembly);
  const dynamo = await startEmbeddedDynamo();
  const raw = localClient(dynamo.endpoint);
  const signed = useOwnSigningKey(assembly.functions);
  const run: Run = {
    assembly,
    raw,
    hosts: new Map(),
    defects,
    served: new Map(),
    signed,
    scenario: await startRecordingProxy(dynamo.endpoint, streamedTables(assembly)),
    eventBus: await startEventBusStandIn(),
  };
  const report: Pick<VerifyReport, 'observed' | 'operatorProof'> = { observed: { uses: [], metrics: [] } };
  try {
    await phase(run, 'creating the tables', () => createTemplateTables(run.raw, assembly));
    await phase(run, 'starting the functions', () => startFunctions(run, dynamo.endpoint));
    await phase(run, 'the scenario', () => playScenario(run));
    await phase(run, 'the scheduled runs', () => runScheduled(run));
    const fed = await phase(run, 'the stream feed', () => feedStreams(run));
    await phase(run, 'the route wiring check', async () => checkRouteWiring(run));
    const observed = observedOf(run, fed);
    report.observed = observed;
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
        report.operatorProof = summary;
      }
    }
  } finally {
    // Every function process and every proxied call ends before the embedded DynamoDB closes.
    await Promise.all([...run.hosts.values()].map((host) => host.close()));
    await Promise.all([run.scenario.close(), run.eventBus.close()]);
    raw.destroy();
    await dynamo.close();
  }
  return {
    stack: assembly.stack,
    defects,
    functions: run.hosts.size,
    invocations: [...run.hosts.values()].reduce((sum, host) => sum + host.invocations, 0),
    operations: operationCounts(assembly, run.hosts),
    alarms: assembly.alarms.length,
    checks: TEMPLATE_CHECK_COUNT,
    ...report,
    elapsedMs: performance.now() - started,
  };
};

/** The template's tables on the embedded DynamoDB, each with its own key schema and indexes. */
export const createTemplateTables = async (raw: DynamoDBClient, assembly: Assembly): Promise<void> => {
  for (const table of assembly.tables) {
    const { KeySchema, AttributeDefinitions, GlobalSecondaryIndexes } = table.properties;
    await raw.send(
      new CreateTableCommand({
        TableName: table.name,
        KeySchema,
        AttributeDefinitions,
        BillingMode: 'PAY_PER_REQUEST',
        ...(GlobalSecondaryIndexes ? { GlobalSecondaryIndexes } : {}),
      }),
    );
  }
};

/** Scheduled functions (the daily Key Expiring run): one scheduled event each. */
const runScheduled = async ({ assembly, hosts, defects }: Run) => {
  for (const id of scheduledFunctions(assembly)) {
    const outcome = await hosts.get(id)?.invoke(scheduledEvent());
    if (outcome?.error) defects.push({ resource: id, reason: `a scheduled run failed: ${outcome.error}` });
  }
};

const startFunctions = async ({ assembly, hosts, defects, eventBus }: Run, endpoint: string) => {
  const streamed = streamedTables(assembly);
  for (const fn of assembly.functions) {
    for (const [name] of Object.entries(fn.environment).filter(([, value]) => value === undefined))
      defects.push({
        resource: fn.logicalId,
        reason: `environment variable ${name} refers to something that cannot be resolved`,
      });
    const host = await startFunction(fn, endpoint, streamed, eventBus.endpoint);
    hosts.set(fn.logicalId, host);
    if (host.importError) defects.push({ resource: fn.logicalId, reason: `fails to load: ${host.importError}` });
  }
};
