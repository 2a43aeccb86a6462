/**
 * The cost model's measured inputs (lib/infra/cost-inputs.json, read by lib/infra/cost.ts), from
 * what the code does: the real handlers and the real aggregator on the embedded DynamoDB, with
 * events shaped as API Gateway and the stream send them. Fails when the code changes a figure;
 * `COST_INPUTS=write npx jest test/cost-inputs.test.ts` rewrites the file (say why in the commit).
 *
 * - Log bytes: the lines each function writes at the deployed level (INFO), captured from stdout,
 *   and the access log line the stage's own format renders for the same call.
 * - Request units: each call's `ReturnConsumedCapacity` as dynalite answers it (a step on the
 *   functions' own clients asks for it; nothing else changes). dynalite counts the table only, so
 *   each index write is computed from the real item by DynamoDB's rules (shared/domain/item-size.ts).
 * - Stored bytes: the real usage item by DynamoDB's size rules, plus its per-item overhead.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { Context } from 'aws-lambda';
import { handler as aggregate, documentClient as aggregatorClient } from '../functions/aggregate-usage';
import { handler as getBranch } from '../functions/get-branch';
import { handler as getProvider } from '../functions/get-payment-provider';
import { handler as listMembers } from '../functions/list-members';
import { handler as listProviders } from '../functions/list-payment-providers';
import { COST_INPUTS_FILE, type MeasuredInputs } from '../lib/infra/cost';
import { synthesizedTemplate } from '../lib/infra/counts';
import { buildContext, buildEvent } from '../lib/local/events';
import { invokeFunction } from '../lib/local/invoke';
import { streamEvent, usageChange } from '../lib/local/stream-events';
import type { ApiContext } from '../shared/api/middlewares';
import { routeKey, routes, type RouteId } from '../shared/api/routes';
import { indexEntryOf, tableDefinitions, type TableNames } from '../shared/data/tables';
import { itemSize, STORAGE_OVERHEAD_BYTES, writeUnits } from '../shared/domain/item-size';
import type { UsageRecord } from '../shared/domain/usage-record';
import { logger } from '../shared/lambda/observability';
import { documentClient } from '../shared/lambda/runtime';
import { captureLogs, createKey, scanRaw, setUpBranches, tableNames } from './support/harness';

type Units = Record<string, number>;
interface Write {
  table: keyof TableNames;
  key: Record<string, unknown>;
  /** Its table's write units, as dynalite answers. */
  units: number;
}

const tableOf = Object.fromEntries(Object.entries(tableNames).map(([name, table]) => [table, name])) as Record<
  string,
  keyof TableNames
>;
const add = (units: Units, name: string, n: number) => (units[name] = (units[name] ?? 0) + n);

/**
 * Asks every call of `client` for its consumed capacity (a step added to its real middleware stack)
 * and adds it up by table; notes each single-item write, and whether it created its item.
 */
const meter = (client: { middlewareStack: { add: Function } }) => {
  let read: Units = {};
  let write: Units = {};
  let writes: Write[] = [];
  client.middlewareStack.add(
    (next: (args: any) => Promise<any>, context: { commandName?: string }) => async (args: any) => {
      const command = context.commandName ?? '';
      const single = /^(Put|Update)/.test(command);
      args.input.ReturnConsumedCapacity = 'INDEXES';
      if (single && args.input.ReturnValues === undefined) args.input.ReturnValues = 'NONE';
      const result = await next(args);
      let units = 0;
      for (const one of [result.output.ConsumedCapacity ?? []].flat()) {
        add(/Get|Query|Scan/.test(command) ? read : write, tableOf[one.TableName]!, one.CapacityUnits);
        units += one.CapacityUnits;
      }
      if (single) writes.push({ table: tableOf[args.input.TableName]!, key: args.input.Key ?? args.input.Item, units });
      return result;
    },
    { step: 'initialize', name: `meter${Math.random()}` },
  );
  return {
    take() {
      const taken = { read, write, writes };
      [read, write, writes] = [{}, {}, []];
      return taken;
    },
  };
};

/** Index writes of `writes` by DynamoDB's rules: an index entry is written when the item it projects changes. */
const indexWriteUnits = async (writes: readonly Write[], createdBefore: Set<string>): Promise<Units> => {
  const units: Units = {};
  const stored = new Map<string, Record<string, unknown>>();
  for (const table of new Set(writes.map((w) => w.table))) {
    for (const raw of await scanRaw(tableNames[table])) {
      const item = unmarshall(raw);
      const definition = tableDefinitions.find((one) => one.name === table)!;
      const key = [definition.partitionKey, definition.sortKey].map((a) => (a ? item[a.name] : '')).join('|');
      stored.set(`${table}|${key}`, item);
    }
  }
  for (const { table, key } of writes) {
    const definition = tableDefinitions.find((one) => one.name === table)!;
    const id = `${table}|${[definition.partitionKey, definition.sortKey].map((a) => (a ? key[a.name] : '')).join('|')}`;
    const item = stored.get(id);
    const created = !createdBefore.has(id);
    createdBefore.add(id);
    for (const index of definition.indexes) {
      const entry = item && indexEntryOf(item, definition, index);
      // KEYS_ONLY: only writing the item changes its entry (an update leaves the keys as they are).
      if (entry && (index.projection !== 'KEYS_ONLY' || created)) {
        add(units, `${table} ${index.indexName} index`, writeUnits(itemSize(entry)));
      }
    }
  }
  return units;
};

/** As API Gateway's HTTP API sends them: a 16-character request id, an IPv4 caller. */
const requestIdOf = (n: number) => `${String(n).padStart(6, '0')}HNoAMEbVA=`;
const SOURCE_IP = '203.0.113.45';

type Handler = typeof getBranch;
const ROUTE_INPUT: Record<RouteId, { handler: Handler; path: string; pathParameters?: Record<string, string> }> = {
  GetBranch: { handler: getBranch, path: '/v1/branch' },
  ListMembers: { handler: listMembers, path: '/v1/members' },
  ListPaymentProviders: { handler: listProviders, path: '/v1/payment-providers' },
  GetPaymentProvider: {
    handler: getProvider,
    path: '/v1/payment-providers/pp_stripe',
    pathParameters: { id: 'pp_stripe' },
  },
};

const call = async (routeId: RouteId, key: string, requestId: string) => {
  const route = routes.find((one) => one.id === routeId)!;
  const input = ROUTE_INPUT[routeId];
  const event = buildEvent({
    path: input.path,
    routeKey: routeKey(route),
    ...(input.pathParameters ? { pathParameters: input.pathParameters } : {}),
    headers: { host: 'abc123.execute-api.us-east-1.amazonaws.com', authorization: `Bearer ${key}` },
    requestId,
    sourceIp: SOURCE_IP,
  });
  const res = await invokeFunction(input.handler, event, buildContext() as ApiContext);
  expect(res.statusCode).toBe(200);
};

/** Lines written while `run` runs, at INFO (the deployed level): their count and bytes. */
const logged = async (run: () => Promise<unknown>) => {
  const logs = captureLogs(logger, 'INFO');
  try {
    await run();
  } finally {
    logs.restore();
  }
  const lines = logs.text.split('\n').filter(Boolean);
  const metrics = lines.flatMap((line) => {
    const emf = (JSON.parse(line) as { _aws?: { CloudWatchMetrics: { Metrics: { Name: string }[] }[] } })._aws;
    return emf ? emf.CloudWatchMetrics.flatMap((one) => one.Metrics.map((metric) => metric.Name)) : [];
  });
  return { lines: lines.length, bytes: lines.reduce((sum, line) => sum + Buffer.byteLength(line), 0), metrics };
};

/** The stage's access log line for a call: its format as synthesized, with that call's values. */
const accessLogLine = (values: Record<string, string>): string => {
  const stage = Object.values<any>(synthesizedTemplate().toJSON().Resources).find(
    (resource) => resource.Type === 'AWS::ApiGatewayV2::Stage',
  );
  return String(stage.Properties.AccessLogSettings.Format).replace(
    /\$context\.([\w.]+)/g,
    (_all, name: string) => values[name] ?? '-',
  );
};

const endpointMeter = meter(documentClient);
const aggregatorMeter = meter(aggregatorClient);
/** A stream batch as the cost model states it: so many calls, of so many keys, in one hour. */
const BATCH = { calls: 100, keys: 10 };
const HOUR = Date.UTC(2026, 10, 29, 6);
/** A warm call's response time on AWS, as stored (two decimals). */
const TYPICAL_MS = 12.34;

let keys: string[];
beforeAll(async () => {
  const { key } = await setUpBranches();
  keys = [key];
  for (let i = 1; i < BATCH.keys; i += 1) keys.push((await createKey({ name: `measured ${i}` })).key);
});

it('measures what lib/infra/cost-inputs.json holds', async () => {
  const max = (into: Units, from: Units) => {
    for (const [name, n] of Object.entries(from)) into[name] = Math.max(into[name] ?? 0, n);
  };
  const endpoint = {
    logLines: 0,
    logBytes: 0,
    readUnits: {} as Units,
    writeUnits: {} as Units,
    metrics: [] as string[],
  };
  const seen = new Set<string>();
  let requestId = '';
  let n = 0;
  for (const route of routes) {
    requestId = requestIdOf((n += 1));
    endpointMeter.take();
    const log = await logged(() => call(route.id, keys[0]!, requestId));
    const { read, write, writes } = endpointMeter.take();
    endpoint.logLines = Math.max(endpoint.logLines, log.lines);
    endpoint.logBytes = Math.max(endpoint.logBytes, log.bytes);
    endpoint.metrics = [...new Set([...endpoint.metrics, ...log.metrics])].sort();
    max(endpoint.readUnits, read);
    max(endpoint.writeUnits, { ...write, ...(await indexWriteUnits(writes, seen)) });
  }
  // The last call's usage record as stored, and its index entries; its response time as a warm call's
  // on AWS (4 digits), so the figure does not move with this machine's speed.
  const stored = (await scanRaw(tableNames.usage)).map((raw) => unmarshall(raw));
  const item: Record<string, unknown> = {
    ...stored.find((one) => one.request_id === requestId)!,
    response_time_ms: TYPICAL_MS,
  };
  const usage = tableDefinitions.find((one) => one.name === 'usage')!;
  const storedBytes: Units = { usage: itemSize(item) + STORAGE_OVERHEAD_BYTES };
  for (const index of usage.indexes) {
    storedBytes[`usage ${index.indexName} index`] =
      itemSize(indexEntryOf(item, usage, index)!) + STORAGE_OVERHEAD_BYTES;
  }
  const access = accessLogLine({
    requestId,
    'identity.sourceIp': SOURCE_IP,
    'identity.userAgent': 'okhttp/4.12.0',
    httpMethod: 'GET',
    routeKey: String(item.route),
    status: '200',
    protocol: 'HTTP/1.1',
    responseLength: '412',
    responseLatency: '23',
    integrationLatency: '21',
    integrationStatus: '200',
    requestTime: '29/Nov/2026:06:08:05 +0000',
  });

  // Two stream batches of the calls of BATCH.keys keys, in the order they were written, in one hour
  // and with a warm call's time whenever the test runs; the second is measured, as most batches of
  // an hour find their items there.
  for (let i = 0; i < 2 * BATCH.calls; i += 1) await call('GetBranch', keys[i % BATCH.keys]!, requestIdOf((n += 1)));
  const calls = (await scanRaw(tableNames.usage))
    .map((raw) => unmarshall(raw) as UsageRecord & { sk: string })
    .filter((record) => record.route === 'GET /v1/branch')
    .sort((a, b) => a.sk.localeCompare(b.sk))
    .slice(-2 * BATCH.calls)
    .map((record, i) => ({
      ...record,
      timestamp: new Date(HOUR + i * 1000).toISOString(),
      response_time_ms: TYPICAL_MS,
    }));
  const aggregateBatch = (first: number) =>
    invokeFunction(
      aggregate,
      streamEvent(
        calls.slice(first, first + BATCH.calls).map((record, i) => usageChange(record, first + i + 1)),
        'arn:aws:dynamodb:us-east-1:123456789012:table/branch-api-usage',
      ),
      buildContext('aggregate') as Context,
    );
  const rollupItems = new Set<string>();
  aggregatorMeter.take();
  await aggregateBatch(0);
  await indexWriteUnits(aggregatorMeter.take().writes, rollupItems);
  const aggregatorLog = await logged(() => aggregateBatch(BATCH.calls));
  const aggregated = aggregatorMeter.take();

  const measured: Omit<MeasuredInputs, 'bench'> = {
    measuredBy: 'test/cost-inputs.test.ts',
    endpoint: {
      ...endpoint,
      accessLogBytes: Buffer.byteLength(access),
      usageItemBytes: itemSize(item),
      storedBytes,
    },
    aggregator: {
      ...BATCH,
      logLines: aggregatorLog.lines,
      logBytes: aggregatorLog.bytes,
      metrics: [...new Set(aggregatorLog.metrics)].sort(),
      readUnits: aggregated.read,
      writeUnits: { ...aggregated.write, ...(await indexWriteUnits(aggregated.writes, rollupItems)) },
      // Once a batch whatever its calls: the aggregator's progress item (a partition no branch has).
      fixedWriteUnits: aggregated.writes
        .filter(({ key }) => String(key.branch_id).startsWith('#'))
        .reduce((sum, { units }) => sum + units, 0),
    },
  };
  if (process.env.COST_INPUTS === 'write') {
    const { bench } = JSON.parse(readFileSync(COST_INPUTS_FILE, 'utf8')) as MeasuredInputs;
    writeFileSync(COST_INPUTS_FILE, `${JSON.stringify({ ...measured, bench }, null, 2)}\n`);
  }
  const file = JSON.parse(readFileSync(COST_INPUTS_FILE, 'utf8')) as MeasuredInputs;
  expect(measured).toEqual({ measuredBy: file.measuredBy, endpoint: file.endpoint, aggregator: file.aggregator });
}, 120_000);
