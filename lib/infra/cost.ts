/**
 * What the stack costs per month at 1 M, 10 M and 100 M API calls, beside the AWS-native
 * alternative (a REST API with API Gateway's own keys and usage plans), from three sources, each
 * named in the output: per-call inputs measured from what the code does (lib/infra/cost-inputs.json:
 * test/cost-inputs.test.ts and `npm run bench` write it), the synthesized template (memory, alarms,
 * tables, retention, tracing, log settings), and list prices with their date. What none of them can
 * say is an assumption, stated as one. `npm run cost` prints it; `npm run docs:counts` writes it
 * into docs/deploy.md ("What it costs").
 */
import { join } from 'node:path';
import { markdownTable } from '../markdown';
import { PROJECT_ROOT } from '../project-paths';
import type { Json } from './nag/rule';
import measuredInputs from './cost-inputs.json';

/** List prices, us-east-1, on-demand, no free tier. */
export const PRICES = {
  region: 'us-east-1',
  asOf: '2026-11',
  httpApiPerMillion: 1.0,
  restApiPerMillion: 3.5,
  lambdaArmPerGbSecond: 0.0000133334,
  lambdaPerMillionRequests: 0.2,
  /** Lambda gives a function CPU in proportion to its memory: one vCPU at this many MB. */
  lambdaMbPerVcpu: 1769,
  /** DynamoDB on-demand since November 2024. */
  dynamoWritePerMillionUnits: 0.625,
  dynamoReadPerMillionUnits: 0.125,
  dynamoStoragePerGbMonth: 0.25,
  pitrPerGbMonth: 0.2,
  /** A standard-resolution alarm, per metric it evaluates (a metric-math alarm pays for each). */
  alarmMetricPerMonth: 0.1,
  customMetricPerMonth: 0.3,
  logsIngestionPerGb: 0.5,
  /** CloudWatch Logs counts each event as its message plus this many bytes. */
  logEventOverheadBytes: 26,
  logsInsightsPerGbScanned: 0.005,
  xrayPerMillionTracesRecorded: 5.0,
} as const;

/** What neither the code, the template nor a price list says: each stated wherever it is used. */
export const ASSUMPTIONS = {
  /** One DynamoDB call from Lambda in the same region ("single-digit milliseconds"). */
  dynamoRoundTripMs: 5,
  /** Billed duration of one aggregator batch. */
  aggregatorBatchMs: 200,
  /** Keys calling, evenly: how many a stream batch holds follows from it (the measured batch's 10). */
  activeKeys: 10,
  /** X-Ray's default sampling rule, which Lambda's active tracing applies: 1 request a second, then 5 %. */
  xrayReservoirPerSecond: 1,
  xrayRate: 0.05,
  /** Usage reports an operator runs a month on the alternative's access logs, each over the month's logs. */
  alternativeReportsPerMonth: 30,
} as const;

/** Where the measured inputs live: what the cost model reads, the test and the bench write. */
export const COST_INPUTS_FILE = join(PROJECT_ROOT, 'lib', 'infra', 'cost-inputs.json');

type Units = Record<string, number>;
/** The per-call inputs measured from the code (lib/infra/cost-inputs.json). */
export interface MeasuredInputs {
  measuredBy: string;
  endpoint: {
    /** Lines and bytes an endpoint function logs for one successful call, the most of any route. */
    logLines: number;
    logBytes: number;
    /** The stage's access log line for that call. */
    accessLogBytes: number;
    /** Request units of one successful call by table (and index), the most of any route. */
    readUnits: Units;
    writeUnits: Units;
    /** Custom metrics published (Powertools EMF lines). */
    metrics: string[];
    usageItemBytes: number;
    /** What one usage record stores, in the table and in each index, overhead included. */
    storedBytes: Units;
  };
  aggregator: {
    /** The stream batch measured: so many calls of so many keys in one hour. */
    calls: number;
    keys: number;
    logLines: number;
    logBytes: number;
    readUnits: Units;
    writeUnits: Units;
    /** Of those, what a batch writes whatever its keys (its progress); the rest is per key in the batch. */
    fixedWriteUnits: number;
    metrics: string[];
  };
  bench: {
    /** `npm run bench` (bench/parts/depth.ts): the p50 slope over a delay injected before DynamoDB. */
    sequentialDepth: number;
    /** The bare baseline with one read a call: the yardstick, 1 by definition. */
    bareDepth: number;
    /** CPU time of the local gateway per call, ms: the handler's work here, and the gateway's (an upper bound). */
    cpuMs: number;
    date: string;
  };
}

export const MEASURED: MeasuredInputs = measuredInputs;
const TEST = MEASURED.measuredBy;

const SECONDS_PER_MONTH = 30 * 24 * 3600;
const GB = 1024 ** 3;
const sum = (units: Units) => Object.values(units).reduce((a, b) => a + b, 0);
const listed = (units: Units) =>
  Object.entries(units)
    .map(([name, n]) => `${name} ${n}`)
    .join(', ');

const resources = (template: Json, type: string): Json[] =>
  Object.values<Json>(template.Resources ?? {}).filter((resource) => resource.Type === type);

const functionWith = (template: Json, variable: string) =>
  resources(template, 'AWS::Lambda::Function').find((fn) => fn.Properties?.Environment?.Variables?.[variable]);

/** Metrics an alarm evaluates: each MetricStat of a metric-math alarm, else its one metric. */
const alarmMetricsOf = (alarm: Json): Json[] =>
  alarm.Properties?.Metrics
    ? alarm.Properties.Metrics.filter((m: Json) => m.MetricStat).map((m: Json) => m.MetricStat.Metric)
    : [alarm.Properties ?? {}];

/** The figures the template gives. */
export const templateInputs = (template: Json) => {
  const endpoint = functionWith(template, 'BRANCH_DATA_TABLE');
  const aggregator = functionWith(template, 'ROLLUP_RETENTION_DAYS');
  const aggregatorId = Object.keys(template.Resources ?? {}).find((id) => template.Resources[id] === aggregator);
  const mapping = resources(template, 'AWS::Lambda::EventSourceMapping').find(
    (one) => one.Properties?.FunctionName?.Ref === aggregatorId,
  );
  const alarms = resources(template, 'AWS::CloudWatch::Alarm');
  const metrics = alarms.flatMap(alarmMetricsOf);
  const tables = resources(template, 'AWS::DynamoDB::Table');
  const systemLevel = endpoint?.Properties?.LoggingConfig?.SystemLogLevel;
  return {
    endpointMemoryMb: Number(endpoint?.Properties?.MemorySize ?? 128),
    aggregatorMemoryMb: Number(aggregator?.Properties?.MemorySize ?? 128),
    architecture: String(endpoint?.Properties?.Architectures?.[0] ?? 'x86_64'),
    // Alarms, and the metrics they evaluate (what CloudWatch bills); those a REST API stack would keep.
    alarms: alarms.length,
    alarmMetrics: metrics.length,
    apiAlarmMetrics: metrics.filter((metric) => metric.Namespace === 'AWS/ApiGateway').length,
    tables: tables.length,
    pitrTables: tables.filter((table) => table.Properties?.PointInTimeRecoverySpecification?.PointInTimeRecoveryEnabled)
      .length,
    usageRetentionDays: Number(endpoint?.Properties?.Environment?.Variables?.USAGE_RETENTION_DAYS ?? 90),
    // Lambda's own START, END and REPORT lines are logged (system log level INFO or unset).
    platformLogs: systemLevel === undefined || systemLevel === 'DEBUG' || systemLevel === 'INFO',
    tracing: endpoint?.Properties?.TracingConfig?.Mode === 'Active',
    // The usage stream's mapping: most records a batch, and how long Lambda gathers them.
    batchSize: Number(mapping?.Properties?.BatchSize ?? 100),
    batchWindowSeconds: Number(mapping?.Properties?.MaximumBatchingWindowInSeconds ?? 0),
  };
};

/** Everything the cost is computed from. */
export type CostInputs = ReturnType<typeof templateInputs> & { measured: MeasuredInputs };

export const costInputs = (template: Json, measured: MeasuredInputs = MEASURED): CostInputs => ({
  ...templateInputs(template),
  measured,
});

/** Bytes of Lambda's START, END and REPORT lines per invocation (their published format), when logged. */
const PLATFORM_LOG = { lines: 3, bytes: 330 };

/**
 * Billed ms of a warm call: its DynamoDB round trips in sequence, each an AWS round trip, plus the
 * CPU it took here scaled to the function's share of a vCPU; Lambda bills whole milliseconds.
 */
export const billedMs = (depth: number, inputs: Pick<CostInputs, 'endpointMemoryMb' | 'measured'>): number =>
  Math.ceil(
    depth * ASSUMPTIONS.dynamoRoundTripMs +
      inputs.measured.bench.cpuMs * Math.max(1, PRICES.lambdaMbPerVcpu / inputs.endpointMemoryMb),
  );

export interface CostLine {
  item: string;
  /** How it is computed, in words and figures. */
  math: string;
  /** Dollars per month at each volume. */
  dollars: number[];
}

export const VOLUMES = [1_000_000, 10_000_000, 100_000_000] as const;

const p = PRICES;
const a = ASSUMPTIONS;
const line = (item: string, math: string, perMonth: (calls: number) => number): CostLine => ({
  item,
  math,
  dollars: VOLUMES.map(perMonth),
});
const gbSeconds = (mb: number, ms: number) => (mb / 1024) * (ms / 1000);
const logGb = (lines: number, bytes: number) => (bytes + lines * p.logEventOverheadBytes) / GB;

const xrayTraces = (calls: number) => {
  const perSecond = calls / SECONDS_PER_MONTH;
  const reservoir = Math.min(perSecond, a.xrayReservoirPerSecond);
  return (reservoir + (perSecond - reservoir) * a.xrayRate) * SECONDS_PER_MONTH;
};
const tracingLine = (on: boolean): CostLine =>
  on
    ? line(
        'X-Ray traces',
        `active tracing, X-Ray's default sampling (${a.xrayReservoirPerSecond}/s + ${a.xrayRate * 100} %), $${p.xrayPerMillionTracesRecorded} per million recorded`,
        (n) => (xrayTraces(n) / 1e6) * p.xrayPerMillionTracesRecorded,
      )
    : line('X-Ray traces', 'tracing off (`-c tracing=false`)', () => 0);

/**
 * A stream batch at a monthly volume: its calls (as many as arrive within the batching window, at
 * most the batch size) and its write units, the measured progress write plus the measured units
 * per key times the keys such a batch holds (calls spread evenly over ASSUMPTIONS.activeKeys).
 */
export const streamBatch = (inputs: CostInputs, callsPerMonth: number) => {
  const { aggregator } = inputs.measured;
  const calls = Math.max(
    1,
    Math.min(inputs.batchSize, (callsPerMonth / SECONDS_PER_MONTH) * inputs.batchWindowSeconds),
  );
  const keys = a.activeKeys * (1 - (1 - 1 / a.activeKeys) ** calls);
  const perKey = (sum(aggregator.writeUnits) - aggregator.fixedWriteUnits) / aggregator.keys;
  return { calls, keys, writeUnits: aggregator.fixedWriteUnits + perKey * keys };
};

/** Each line of the bill at each volume: this stack (HTTP API, bearer keys in DynamoDB). */
export const stackCost = (inputs: CostInputs): CostLine[] => {
  const { endpoint, aggregator, bench } = inputs.measured;
  const batches = (n: number) => n / streamBatch(inputs, n).calls;
  const batchWrites = (n: number) => batches(n) * streamBatch(inputs, n).writeUnits;
  const ms = billedMs(bench.sequentialDepth, inputs);
  const platform = inputs.platformLogs ? PLATFORM_LOG : { lines: 0, bytes: 0 };
  const callLog = {
    lines: endpoint.logLines + 1 + platform.lines,
    bytes: endpoint.logBytes + endpoint.accessLogBytes + platform.bytes,
  };
  const months = inputs.usageRetentionDays / 30;
  const indexBytes = sum(endpoint.storedBytes) - endpoint.storedBytes.usage!;
  const customMetrics = new Set([...endpoint.metrics, ...aggregator.metrics]).size;
  const batchShape = VOLUMES.map((n) => Math.round(streamBatch(inputs, n).calls)).join(' / ');
  return [
    line(
      'API Gateway HTTP API',
      `$${p.httpApiPerMillion} per million requests`,
      (n) => (n / 1e6) * p.httpApiPerMillion,
    ),
    line(
      'Lambda requests',
      `1 endpoint invocation per call + 1 aggregator batch per ${batchShape} calls (batches of ≤ ${inputs.batchSize} gathered for ≤ ${inputs.batchWindowSeconds} s), $${p.lambdaPerMillionRequests} per million`,
      (n) => ((n + batches(n)) / 1e6) * p.lambdaPerMillionRequests,
    ),
    line(
      'Lambda duration',
      `${ms} ms at ${inputs.endpointMemoryMb} MB (${inputs.architecture}) per call + ${a.aggregatorBatchMs} ms at ${inputs.aggregatorMemoryMb} MB per batch, $${p.lambdaArmPerGbSecond} per GB-s`,
      (n) =>
        (n * gbSeconds(inputs.endpointMemoryMb, ms) +
          batches(n) * gbSeconds(inputs.aggregatorMemoryMb, a.aggregatorBatchMs)) *
        p.lambdaArmPerGbSecond,
    ),
    line(
      'DynamoDB writes',
      `per call: ${listed(endpoint.writeUnits)}; per stream batch: ${aggregator.fixedWriteUnits} + ${(sum(aggregator.writeUnits) - aggregator.fixedWriteUnits) / aggregator.keys} per key in it (${a.activeKeys} keys calling); $${p.dynamoWritePerMillionUnits} per million units`,
      (n) => ((n * sum(endpoint.writeUnits) + batchWrites(n)) / 1e6) * p.dynamoWritePerMillionUnits,
    ),
    line(
      'DynamoDB reads',
      `per call: ${listed(endpoint.readUnits)}; per batch: ${listed(aggregator.readUnits) || 'none'}; $${p.dynamoReadPerMillionUnits} per million units`,
      (n) =>
        ((n * sum(endpoint.readUnits) + batches(n) * sum(aggregator.readUnits)) / 1e6) * p.dynamoReadPerMillionUnits,
    ),
    line(
      'DynamoDB storage and PITR',
      `usage records kept ${inputs.usageRetentionDays} days, ${listed(endpoint.storedBytes)} B each; $${p.dynamoStoragePerGbMonth} per GB-month, PITR $${p.pitrPerGbMonth}; the other tables hold far less`,
      (n) =>
        ((n * months) / GB) *
        ((endpoint.storedBytes.usage! + indexBytes) * p.dynamoStoragePerGbMonth +
          endpoint.storedBytes.usage! * p.pitrPerGbMonth),
    ),
    line(
      'CloudWatch Logs',
      `per call: the access log line (${endpoint.accessLogBytes} B), ${endpoint.logLines} function lines (${endpoint.logBytes} B)${inputs.platformLogs ? `, Lambda's START/END/REPORT (~${PLATFORM_LOG.bytes} B)` : ''}; per batch ${aggregator.logBytes} B; +${p.logEventOverheadBytes} B a line, $${p.logsIngestionPerGb} per GB`,
      (n) =>
        (n * logGb(callLog.lines, callLog.bytes) + batches(n) * logGb(aggregator.logLines, aggregator.logBytes)) *
        p.logsIngestionPerGb,
    ),
    line(
      'CloudWatch alarms and metrics',
      `${inputs.alarms} alarms evaluating ${inputs.alarmMetrics} metrics ($${p.alarmMetricPerMonth} each); ${customMetrics} custom metric${customMetrics === 1 ? '' : 's'} published when nothing fails ($${p.customMetricPerMonth})`,
      () => inputs.alarmMetrics * p.alarmMetricPerMonth + customMetrics * p.customMetricPerMonth,
    ),
    tracingLine(inputs.tracing),
  ];
};

/**
 * The same traffic on a REST API with API keys and usage plans: its bare minimum (no per-call record,
 * the same logs and tracing), and with what its user adds for the same records: an access log line
 * carrying the usage record's fields, and a Logs Insights query over the month's lines per report.
 */
export const nativeCost = (inputs: CostInputs): { bare: CostLine[]; withRecords: CostLine[] } => {
  const { endpoint, bench } = inputs.measured;
  const ms = billedMs(bench.bareDepth, inputs);
  const platform = inputs.platformLogs ? PLATFORM_LOG : { lines: 0, bytes: 0 };
  const bare = [
    line(
      'API Gateway REST API',
      `$${p.restApiPerMillion} per million requests (API keys and usage plans included)`,
      (n) => (n / 1e6) * p.restApiPerMillion,
    ),
    line(
      'Lambda',
      `1 invocation per call, ${ms} ms at ${inputs.endpointMemoryMb} MB (one read: ${bench.bareDepth} round trips)`,
      (n) =>
        (n / 1e6) * p.lambdaPerMillionRequests + n * gbSeconds(inputs.endpointMemoryMb, ms) * p.lambdaArmPerGbSecond,
    ),
    line(
      'DynamoDB reads',
      `branch data ${endpoint.readUnits.branchData} units per call`,
      (n) => ((n * (endpoint.readUnits.branchData ?? 0)) / 1e6) * p.dynamoReadPerMillionUnits,
    ),
    line(
      'CloudWatch, X-Ray',
      `the same minimal access log line${inputs.platformLogs ? ' and Lambda lines' : ''}, ${inputs.apiAlarmMetrics} API alarm metrics, the same tracing`,
      (n) =>
        n * logGb(1 + platform.lines, endpoint.accessLogBytes + platform.bytes) * p.logsIngestionPerGb +
        inputs.apiAlarmMetrics * p.alarmMetricPerMonth +
        (inputs.tracing ? (xrayTraces(n) / 1e6) * p.xrayPerMillionTracesRecorded : 0),
    ),
  ];
  // The access log line then carries the record: key id, branch, method, path, route, status, time, ip, request id.
  const recordLine = logGb(1, endpoint.usageItemBytes + 40);
  const withRecords = [
    ...bare,
    line(
      'Access log records',
      `the usage record's fields in each access line (~${endpoint.usageItemBytes + 40} B more), $${p.logsIngestionPerGb} per GB`,
      (n) => n * recordLine * p.logsIngestionPerGb,
    ),
    line(
      'Usage reports',
      `${a.alternativeReportsPerMonth} Logs Insights queries a month, each over the month's lines, $${p.logsInsightsPerGbScanned} per GB scanned`,
      (n) =>
        a.alternativeReportsPerMonth *
        n *
        (recordLine + logGb(1, endpoint.accessLogBytes)) *
        p.logsInsightsPerGbScanned,
    ),
  ];
  return { bare, withRecords };
};

export const total = (lines: readonly CostLine[]) =>
  VOLUMES.map((_v, i) => lines.reduce((sum_, one) => sum_ + one.dollars[i]!, 0));
const money = (dollars: number) =>
  `$${dollars < 10 ? dollars.toFixed(2) : Math.round(dollars).toLocaleString('en-US')}`;
const volume = (calls: number) => `${calls / 1e6} M calls`;

/** Each input of the model, its value and where it comes from. */
const inputRows = (inputs: CostInputs): string[][] => {
  const { endpoint, aggregator, bench } = inputs.measured;
  const measured = `measured: \`${TEST}\``;
  const benched = `measured: \`npm run bench\` (${bench.date})`;
  return [
    ['Input', 'Value', 'Source'],
    ['Function log lines per successful call', `${endpoint.logLines} (${endpoint.logBytes} B)`, measured],
    ['Access log line per call', `${endpoint.accessLogBytes} B`, `${measured} (the stage's format)`],
    [
      `Aggregator log per batch of ${aggregator.calls} calls of ${aggregator.keys} keys`,
      `${aggregator.logLines} lines (${aggregator.logBytes} B)`,
      measured,
    ],
    [
      'Write units per call',
      listed(endpoint.writeUnits),
      `${measured} (dynalite's ConsumedCapacity; indexes by DynamoDB's rules)`,
    ],
    ['Read units per call', listed(endpoint.readUnits), `${measured} (dynalite's ConsumedCapacity)`],
    ['Write units per batch', listed(aggregator.writeUnits), `${measured} (as above)`],
    [
      'Stored bytes per usage record',
      listed(endpoint.storedBytes),
      `${measured} (DynamoDB's size rules, +100 B an item)`,
    ],
    ['DynamoDB round trips a call waits for', `${bench.sequentialDepth} (bare, one read: ${bench.bareDepth})`, benched],
    ['CPU time of a call, here', `≤ ${bench.cpuMs} ms (the local gateway's, per call)`, benched],
    ['One DynamoDB round trip on AWS', `${ASSUMPTIONS.dynamoRoundTripMs} ms`, 'assumed'],
    [
      'Billed duration of a warm call',
      `${billedMs(bench.sequentialDepth, inputs)} ms`,
      `round trips × ${ASSUMPTIONS.dynamoRoundTripMs} ms + CPU × ${PRICES.lambdaMbPerVcpu} MB ÷ memory`,
    ],
    ['Aggregator batch duration', `${ASSUMPTIONS.aggregatorBatchMs} ms`, 'assumed'],
    [
      'Memory, alarms, tables, retention, tracing, logs',
      `${inputs.endpointMemoryMb} MB ${inputs.architecture}; ${inputs.alarms} alarms (${inputs.alarmMetrics} metrics); ${inputs.tables} tables (${inputs.pitrTables} with PITR); usage kept ${inputs.usageRetentionDays} days; tracing ${inputs.tracing ? 'active' : 'off'}; Lambda's own lines ${inputs.platformLogs ? 'on' : 'off'}`,
      'the synthesized template',
    ],
    ['Prices', `${PRICES.region}, on-demand, no free tier`, `list prices as of ${PRICES.asOf} (\`lib/infra/cost.ts\`)`],
  ];
};

/** The cost section's generated body: inputs, both tables, totals and per-million figures. */
export const renderCost = (inputs: CostInputs, start: string, end: string): string => {
  const ours = stackCost(inputs);
  const { bare, withRecords } = nativeCost(inputs);
  const header = ['Item', 'How', ...VOLUMES.map(volume)];
  const rows = (lines: CostLine[]) => lines.map((one) => [one.item, one.math, ...one.dollars.map(money)]);
  const totalRow = (label: string, lines: CostLine[]) => [
    `**${label}**`,
    '',
    ...total(lines).map((d) => `**${money(d)}**`),
  ];
  const perMillion = (lines: CostLine[]) => money(total(lines)[2]! / 100);
  return [
    start,
    '',
    ...markdownTable(inputRows(inputs)),
    '',
    '**This stack** (HTTP API, bearer keys, per-key rate limits, a usage record per call, rollups):',
    '',
    ...markdownTable([header, ...rows(ours), totalRow('Total per month', ours)]),
    '',
    '**The AWS-native alternative** (REST API, API Gateway API keys and usage plans), bare and with the same records added:',
    '',
    ...markdownTable([
      header,
      ...rows(bare),
      totalRow('Total, bare (no per-call record)', bare),
      ...rows(withRecords.slice(bare.length)),
      totalRow('Total with per-call records', withRecords),
    ]),
    '',
    `At 100 M calls a month: ${perMillion(ours)} per million calls for this stack; ` +
      `${perMillion(withRecords)} for the alternative with per-call records, ${perMillion(bare)} bare.`,
    '',
    end,
  ].join('\n');
};
