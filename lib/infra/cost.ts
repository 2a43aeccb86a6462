/**
 * What the stack costs per month at a given number of API calls, from the synthesized template
 * (memory, architecture, alarms and their metrics, tables, indexes, point-in-time recovery,
 * retention, stream batch size) and the DynamoDB calls each route declares (shared/api/routes.ts,
 * which test/dynamodb-calls.test.ts holds to what the handlers do), beside the AWS-native
 * alternative: a REST API with API Gateway's own API keys and usage plans. `npm run cost` prints
 * it; `npm run docs:counts` writes it into docs/deploy.md ("What it costs").
 */
import { routes, tableAccessOf } from '../../shared/api/routes';
import { TABLE_ENV, type TableNames } from '../../shared/data/tables';
import { markdownTable } from '../markdown';
import type { Json } from './nag/rule';

/** List prices, us-east-1, on-demand, no free tier: the assumptions every figure rests on. */
export const PRICES = {
  region: 'us-east-1',
  asOf: '2026-11',
  httpApiPerMillion: 1.0,
  restApiPerMillion: 3.5,
  lambdaArmPerGbSecond: 0.0000133334,
  lambdaPerMillionRequests: 0.2,
  /** DynamoDB on-demand since November 2024. */
  dynamoWritePerMillionUnits: 0.625,
  dynamoReadPerMillionUnits: 0.125,
  dynamoStoragePerGbMonth: 0.25,
  pitrPerGbMonth: 0.2,
  /** A standard-resolution alarm, per metric it evaluates (a metric-math alarm pays for each). */
  alarmMetricPerMonth: 0.1,
  eventBridgePerMillionEvents: 1.0,
  sqsPerMillionRequests: 0.4,
  logsIngestionPerGb: 0.5,
  xrayPerMillionTracesRecorded: 5.0,
} as const;

/** What the template cannot say: assumed traffic shape, each stated in the doc with the table. */
export const ASSUMPTIONS = {
  /** Billed duration of a warm endpoint invocation (docs/deploy.md "Limits": ~20-30 ms). */
  endpointMs: 30,
  /** Billed duration of one aggregator batch. */
  aggregatorBatchMs: 200,
  /** Stored size of one usage record, in the table and again in its `by-key` index. */
  usageRecordBytes: 400,
  /** Log lines one call writes: the access log line, the function's request line, Lambda's REPORT line. */
  logBytesPerCall: 1500,
  /** X-Ray's default sampling rule: the first request each second, then 5 % of the rest. */
  xrayReservoirPerSecond: 1,
  xrayRate: 0.05,
} as const;

const SECONDS_PER_MONTH = 30 * 24 * 3600;
const GB = 1024 ** 3;

/** The figures the cost is computed from, each read from the template or the route table. */
export interface CostInputs {
  endpointMemoryMb: number;
  aggregatorMemoryMb: number;
  architecture: string;
  /** Alarms, and the metrics they evaluate (what CloudWatch bills). */
  alarms: number;
  alarmMetrics: number;
  tables: number;
  pitrTables: number;
  usageRetentionDays: number;
  streamBatchSize: number;
  /** DynamoDB request units one successful call costs (the route's declared calls, the most of any route). */
  readUnitsPerCall: number;
  writeUnitsPerCall: number;
  callsPerRequest: number;
}

const resources = (template: Json, type: string): Json[] =>
  Object.values<Json>(template.Resources ?? {}).filter((resource) => resource.Type === type);

const functionByEntry = (template: Json, variable: string) =>
  resources(template, 'AWS::Lambda::Function').find((fn) => fn.Properties?.Environment?.Variables?.[variable]);

/** Indexes of a table the function names (each write to a table is written again to each `ALL` index). */
const indexesOf = (template: Json, fn: Json | undefined, name: keyof TableNames): number => {
  const ref = fn?.Properties?.Environment?.Variables?.[TABLE_ENV[name]]?.Ref;
  return (template.Resources?.[ref]?.Properties?.GlobalSecondaryIndexes ?? []).length;
};

/** Strongly consistent reads (the key lookup) cost a whole read unit; the rest half of one (up to 4 KB). */
const STRONG_READS = new Set<keyof TableNames>(['keys']);

export const costInputs = (template: Json): CostInputs => {
  const endpoint = functionByEntry(template, 'BRANCH_DATA_TABLE');
  const aggregator = functionByEntry(template, 'ROLLUP_RETENTION_DAYS');
  const alarms = resources(template, 'AWS::CloudWatch::Alarm');
  const perRoute = routes.map((route) => {
    let reads = 0;
    let writes = 0;
    for (const { table, actions } of tableAccessOf(route)) {
      for (const action of actions) {
        if (/GetItem|Query/.test(action)) reads += STRONG_READS.has(table) ? 1 : 0.5;
        else writes += 1 + indexesOf(template, endpoint, table);
      }
    }
    return { reads, writes, calls: tableAccessOf(route).reduce((sum, access) => sum + access.actions.length, 0) };
  });
  const mapping = resources(template, 'AWS::Lambda::EventSourceMapping')[0];
  return {
    endpointMemoryMb: Number(endpoint?.Properties?.MemorySize ?? 128),
    aggregatorMemoryMb: Number(aggregator?.Properties?.MemorySize ?? 128),
    architecture: String(endpoint?.Properties?.Architectures?.[0] ?? 'x86_64'),
    alarms: alarms.length,
    alarmMetrics: alarms.reduce(
      (sum, alarm) =>
        sum + Math.max(1, (alarm.Properties?.Metrics ?? []).filter((metric: Json) => metric.MetricStat).length),
      0,
    ),
    tables: resources(template, 'AWS::DynamoDB::Table').length,
    pitrTables: resources(template, 'AWS::DynamoDB::Table').filter(
      (table) => table.Properties?.PointInTimeRecoverySpecification?.PointInTimeRecoveryEnabled,
    ).length,
    usageRetentionDays: Number(endpoint?.Properties?.Environment?.Variables?.USAGE_RETENTION_DAYS ?? 90),
    streamBatchSize: Number(mapping?.Properties?.BatchSize ?? 100),
    readUnitsPerCall: Math.max(...perRoute.map(({ reads }) => reads)),
    writeUnitsPerCall: Math.max(...perRoute.map(({ writes }) => writes)),
    callsPerRequest: Math.max(...perRoute.map(({ calls }) => calls)),
  };
};

export interface CostLine {
  item: string;
  /** How it is computed, in words and figures. */
  math: string;
  /** Dollars per month at each volume. */
  dollars: number[];
}

export const VOLUMES = [1_000_000, 10_000_000, 100_000_000] as const;

const xrayTraces = (calls: number) => {
  const perSecond = calls / SECONDS_PER_MONTH;
  const reservoir = Math.min(perSecond, ASSUMPTIONS.xrayReservoirPerSecond);
  return (reservoir + (perSecond - reservoir) * ASSUMPTIONS.xrayRate) * SECONDS_PER_MONTH;
};

const p = PRICES;
const a = ASSUMPTIONS;
/** One line of the bill: `perMonth` at each volume. */
const line = (item: string, math: string, perMonth: (calls: number) => number): CostLine => ({
  item,
  math,
  dollars: VOLUMES.map(perMonth),
});

/** Each line of the bill at each volume: this stack (HTTP API, bearer keys in DynamoDB). */
export const stackCost = (inputs: CostInputs): CostLine[] => {
  const batchesPerCall = 1 / inputs.streamBatchSize;
  // Usage records kept for the retention period, in the table and its by-key index.
  const usageGb = (calls: number) => (calls * (inputs.usageRetentionDays / 30) * a.usageRecordBytes * 2) / GB;
  const gbSeconds = (mb: number, ms: number) => (mb / 1024) * (ms / 1000);
  return [
    line(
      'API Gateway HTTP API',
      `$${p.httpApiPerMillion} per million requests`,
      (n) => (n / 1e6) * p.httpApiPerMillion,
    ),
    line(
      'Lambda requests',
      `1 endpoint invocation per call + 1 aggregator batch per ${inputs.streamBatchSize} calls, $${p.lambdaPerMillionRequests} per million`,
      (n) => ((n * (1 + batchesPerCall)) / 1e6) * p.lambdaPerMillionRequests,
    ),
    line(
      'Lambda duration',
      `${a.endpointMs} ms at ${inputs.endpointMemoryMb} MB (${inputs.architecture}) per call + ${a.aggregatorBatchMs} ms at ${inputs.aggregatorMemoryMb} MB per batch, $${p.lambdaArmPerGbSecond} per GB-s`,
      (n) =>
        (n * gbSeconds(inputs.endpointMemoryMb, a.endpointMs) +
          n * batchesPerCall * gbSeconds(inputs.aggregatorMemoryMb, a.aggregatorBatchMs)) *
        p.lambdaArmPerGbSecond,
    ),
    line(
      'DynamoDB writes',
      `${inputs.writeUnitsPerCall} write units per call (rate-limit counter; usage record and its index) + 2 per batch (rollup hour and last-used items), $${p.dynamoWritePerMillionUnits} per million`,
      (n) => ((n * (inputs.writeUnitsPerCall + 2 * batchesPerCall)) / 1e6) * p.dynamoWritePerMillionUnits,
    ),
    line(
      'DynamoDB reads',
      `${inputs.readUnitsPerCall} read units per call (key lookup, strongly consistent; branch data), $${p.dynamoReadPerMillionUnits} per million`,
      (n) => ((n * inputs.readUnitsPerCall) / 1e6) * p.dynamoReadPerMillionUnits,
    ),
    line(
      'DynamoDB storage and PITR',
      `usage records over ${inputs.usageRetentionDays} days, ${a.usageRecordBytes} B each ×2 (index), $${p.dynamoStoragePerGbMonth} + $${p.pitrPerGbMonth} (PITR on ${inputs.pitrTables} of ${inputs.tables} tables) per GB-month`,
      (n) => usageGb(n) * (p.dynamoStoragePerGbMonth + p.pitrPerGbMonth),
    ),
    line(
      'CloudWatch alarms',
      `${inputs.alarms} alarms evaluating ${inputs.alarmMetrics} metrics, $${p.alarmMetricPerMonth} per metric-month`,
      () => inputs.alarmMetrics * p.alarmMetricPerMonth,
    ),
    line(
      'CloudWatch Logs',
      `${a.logBytesPerCall} B of log lines per call, $${p.logsIngestionPerGb} per GB ingested`,
      (n) => ((n * a.logBytesPerCall) / GB) * p.logsIngestionPerGb,
    ),
    line(
      'X-Ray traces',
      `default sampling (${a.xrayReservoirPerSecond}/s + ${a.xrayRate * 100} %), $${p.xrayPerMillionTracesRecorded} per million recorded`,
      (n) => (xrayTraces(n) / 1e6) * p.xrayPerMillionTracesRecorded,
    ),
    line(
      'EventBridge, SQS',
      `key events only on key actions and rate limits reached ($${p.eventBridgePerMillionEvents} per million); the failure queue only on failures ($${p.sqsPerMillionRequests} per million): about 0`,
      () => 0,
    ),
  ];
};

/** The same traffic on a REST API with API keys and usage plans: no key, counter or usage writes of ours. */
export const nativeCost = (inputs: CostInputs): CostLine[] => [
  line('API Gateway REST API', `$${p.restApiPerMillion} per million requests`, (n) => (n / 1e6) * p.restApiPerMillion),
  line(
    'Lambda',
    `1 invocation per call, ${a.endpointMs} ms at ${inputs.endpointMemoryMb} MB`,
    (n) =>
      (n / 1e6) * p.lambdaPerMillionRequests +
      n * (inputs.endpointMemoryMb / 1024) * (a.endpointMs / 1000) * p.lambdaArmPerGbSecond,
  ),
  line(
    'DynamoDB reads',
    '0.5 read units per call (branch data only)',
    (n) => ((n * 0.5) / 1e6) * p.dynamoReadPerMillionUnits,
  ),
  line(
    'CloudWatch, X-Ray',
    'the same alarms, logs and traces',
    (n) =>
      inputs.alarmMetrics * p.alarmMetricPerMonth +
      ((n * a.logBytesPerCall) / GB) * p.logsIngestionPerGb +
      (xrayTraces(n) / 1e6) * p.xrayPerMillionTracesRecorded,
  ),
];

const total = (lines: CostLine[]) => VOLUMES.map((_v, i) => lines.reduce((sum, line) => sum + line.dollars[i]!, 0));
const money = (dollars: number) =>
  `$${dollars < 10 ? dollars.toFixed(2) : Math.round(dollars).toLocaleString('en-US')}`;
const volume = (calls: number) => `${calls / 1e6} M calls`;

/** The cost section's generated body: both tables, totals and per-million figures, and the prices. */
export const renderCost = (inputs: CostInputs, start: string, end: string): string => {
  const ours = stackCost(inputs);
  const native = nativeCost(inputs);
  const rows = (lines: CostLine[]) => [
    ...lines.map((line) => [line.item, line.math, ...line.dollars.map(money)]),
    ['**Total per month**', '', ...total(lines).map((dollars) => `**${money(dollars)}**`)],
  ];
  const header = ['Item', 'How', ...VOLUMES.map(volume)];
  const perMillion = (lines: CostLine[]) => money(total(lines)[2]! / 100);
  return [
    start,
    '',
    `Prices: ${PRICES.region} list prices as of ${PRICES.asOf} (on-demand, no free tier), in \`lib/infra/cost.ts\`. ` +
      `From the template: ${inputs.endpointMemoryMb} MB ${inputs.architecture} endpoints, ${inputs.alarms} alarms (${inputs.alarmMetrics} metrics), ` +
      `${inputs.tables} tables (${inputs.pitrTables} with PITR), usage kept ${inputs.usageRetentionDays} days, stream batches of ${inputs.streamBatchSize}; ` +
      `${inputs.callsPerRequest} DynamoDB calls per request.`,
    '',
    '**This stack** (HTTP API, bearer keys, per-key rate limits and usage records in DynamoDB):',
    '',
    ...markdownTable([header, ...rows(ours)]),
    '',
    '**The AWS-native alternative** (REST API, API Gateway API keys and usage plans; no usage log of its own, no per-call records, keys shown in the console):',
    '',
    ...markdownTable([header, ...rows(native)]),
    '',
    `At 100 M calls a month: ${perMillion(ours)} per million calls for this stack, ${perMillion(native)} for the alternative.`,
    '',
    end,
  ].join('\n');
};
