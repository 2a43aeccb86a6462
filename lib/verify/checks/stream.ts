/**
 * Stream consumers as deployed: every streamed table feeds a function through an event source
 * mapping that is enabled, starts at the oldest record, batches within the lag target, reports
 * partial batch failures, splits failing batches, retries a bounded number of times, sends what
 * still fails to a destination that exists, and is only invoked for the events the code handles.
 */
import { PENDING_ENTRY_PATTERN } from '../../infra/key-actions-stream';
import { AGGREGATED_EVENT_NAMES, MAX_BATCHING_WINDOW_SECONDS } from '../../infra/usage-aggregation';
import { tableDefinitions, type TableNames } from '../../../shared/data/tables';
import { filterPatterns, type Json } from '../assembly';
import { defect, resourcesOf, targetOf, type CheckContext, type TemplateCheck } from './table';
import { tableOf } from './tables';

/** Each streamed table's consumer is invoked only for what its code handles. */
const EXPECTED_FILTERS: Partial<Record<keyof TableNames, { pattern: Json; handles: string }>> = {
  usage: {
    pattern: { eventName: [...AGGREGATED_EVENT_NAMES] },
    handles: 'inserted usage records (TTL deletions do not invoke it)',
  },
  keys: { pattern: PENDING_ENTRY_PATTERN, handles: 'key items carrying a pending activity entry' },
};

/** The definition of the table a mapping reads, by the template's table for each definition. */
const definitionRead = (context: CheckContext, props: Json) =>
  tableDefinitions.find((definition) => tableOf(context, definition)?.[0] === targetOf(props.EventSourceArn));

const mappingsOf = (context: CheckContext) =>
  resourcesOf(context.assembly, 'AWS::Lambda::EventSourceMapping').filter(([, props]) =>
    JSON.stringify(props.EventSourceArn ?? '').includes('StreamArn'),
  );

/** A check of each stream mapping's properties: `problem` says what is wrong, or nothing. */
const mappingCheck = (
  name: string,
  description: string,
  problem: (props: Json, context: CheckContext) => string | undefined,
): TemplateCheck => ({
  name,
  description,
  run: (context) =>
    mappingsOf(context).flatMap(([id, props]) => {
      const found = problem(props, context);
      return found ? [defect(id, found)] : [];
    }),
});

const isBoundedInteger = (value: unknown, min: number, max: number) =>
  Number.isInteger(value) && (value as number) >= min && (value as number) <= max;

const everyStreamConsumed: TemplateCheck = {
  name: 'stream-consumed',
  description: 'every table with a stream feeds a function, and every mapping reads a stream of the stack',
  run: (context) => {
    const mappings = mappingsOf(context);
    const read = new Set(mappings.map(([, props]) => targetOf(props.EventSourceArn)));
    return [
      ...context.assembly.tables
        .filter((table) => table.streamArn && !read.has(table.logicalId))
        .map((table) => defect(table.logicalId, 'its stream feeds no function (no event source mapping reads it)')),
      ...mappings
        .filter(
          ([, props]) =>
            context.assembly.resources[targetOf(props.EventSourceArn) ?? '']?.Properties?.StreamSpecification ===
            undefined,
        )
        .map(([id]) => defect(id, 'reads the stream of a table that has none')),
    ];
  },
};

/** SQS's longest retention: a failed batch waits two weeks for someone to look. */
const FOURTEEN_DAYS = 14 * 24 * 3600;

const failureQueue = mappingCheck(
  'stream-failure-queue',
  'a failure queue is encrypted and keeps messages 14 days',
  (props, context) => {
    const target = targetOf(props.DestinationConfig?.OnFailure?.Destination) ?? '';
    const queue = context.assembly.resources[target];
    if (queue?.Type !== 'AWS::SQS::Queue') return undefined;
    const q = (queue.Properties ?? {}) as Json;
    if (q.SqsManagedSseEnabled !== true && !q.KmsMasterKeyId) return `failure queue ${target} is not encrypted`;
    return Number(q.MessageRetentionPeriod) === FOURTEEN_DAYS
      ? undefined
      : `failure queue ${target} keeps messages ${q.MessageRetentionPeriod ?? 345_600} s, expected ${FOURTEEN_DAYS} (14 days)`;
  },
);

export const streamChecks: readonly TemplateCheck[] = [
  everyStreamConsumed,
  mappingCheck('stream-enabled', 'the mapping is enabled', (props) =>
    props.Enabled === false ? 'the mapping is disabled: nothing reads the stream' : undefined,
  ),
  mappingCheck(
    'stream-starting-position',
    'it starts at the oldest record (TRIM_HORIZON): nothing written before it is skipped',
    (props) =>
      props.StartingPosition === 'TRIM_HORIZON'
        ? undefined
        : `starting position ${props.StartingPosition}, expected TRIM_HORIZON`,
  ),
  mappingCheck(
    'stream-batching',
    `batch size 1-1000 and a batching window of at most ${MAX_BATCHING_WINDOW_SECONDS} s (the lag target)`,
    (props) => {
      if (!isBoundedInteger(props.BatchSize ?? 100, 1, 1000)) return `batch size ${props.BatchSize} is outside 1-1000`;
      const window = props.MaximumBatchingWindowInSeconds;
      return isBoundedInteger(window, 0, MAX_BATCHING_WINDOW_SECONDS)
        ? undefined
        : `batching window ${JSON.stringify(window ?? 'none')} s, expected 0-${MAX_BATCHING_WINDOW_SECONDS}`;
    },
  ),
  mappingCheck(
    'stream-partial-batch',
    'partial batch responses (ReportBatchItemFailures), which the handler returns',
    (props) =>
      [props.FunctionResponseTypes ?? []].flat().includes('ReportBatchItemFailures')
        ? undefined
        : 'no ReportBatchItemFailures: a failed record would be taken as success',
  ),
  mappingCheck('stream-bisect', 'a failing batch is split in two (BisectBatchOnFunctionError)', (props) =>
    props.BisectBatchOnFunctionError === true
      ? undefined
      : 'BisectBatchOnFunctionError is off: one bad record holds back its whole batch',
  ),
  mappingCheck(
    'stream-retries',
    'bounded retries and record age (neither -1 nor absent, which mean forever)',
    (props) => {
      if (!isBoundedInteger(props.MaximumRetryAttempts, 0, 10_000))
        return `retries ${JSON.stringify(props.MaximumRetryAttempts ?? 'unbounded')}: a poisoned batch would block its shard for the stream's 24 h`;
      return isBoundedInteger(props.MaximumRecordAgeInSeconds, 60, 604_800)
        ? undefined
        : `record age ${JSON.stringify(props.MaximumRecordAgeInSeconds ?? 'unbounded')}: expected 60-604800 s`;
    },
  ),
  mappingCheck(
    'stream-failure-destination',
    'what still fails goes to an SQS queue or SNS topic of the stack',
    (props, context) => {
      const target = targetOf(props.DestinationConfig?.OnFailure?.Destination);
      if (!target) return 'no on-failure destination: a batch that fails past its retries is lost';
      const type = context.assembly.resources[target]?.Type;
      return type === 'AWS::SQS::Queue' || type === 'AWS::SNS::Topic'
        ? undefined
        : `on-failure destination ${target} is not a queue or topic of the stack`;
    },
  ),
  failureQueue,
  mappingCheck(
    'stream-filter',
    `only the records its code handles invoke a consumer: ${Object.values(EXPECTED_FILTERS)
      .map((expected) => expected.handles)
      .join('; ')}`,
    (props, context) => {
      const name = definitionRead(context, props)?.name;
      const expected = name && EXPECTED_FILTERS[name];
      if (!expected) return undefined;
      const patterns = filterPatterns(props);
      if (!patterns) return `no readable filter: every record invokes the function, not only ${expected.handles}`;
      const found = patterns.map((pattern) => JSON.stringify(pattern)).join(' or ');
      return found === JSON.stringify(expected.pattern)
        ? undefined
        : `filter ${found}, expected ${JSON.stringify(expected.pattern)}`;
    },
  ),
];
