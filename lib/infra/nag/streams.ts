/**
 * Stream consumers: every streamed table feeds a function through an event source mapping that is
 * enabled, starts at the oldest record, batches within the lag target, reports partial batch
 * failures, splits failing batches, retries a bounded number of times, sends what still fails to
 * an encrypted queue of the stack, and is invoked only for the records its code handles.
 */
import { CfnTable } from 'aws-cdk-lib/aws-dynamodb';
import { CfnEventSourceMapping } from 'aws-cdk-lib/aws-lambda';
import { CfnTopic } from 'aws-cdk-lib/aws-sns';
import { CfnQueue } from 'aws-cdk-lib/aws-sqs';
import type { TableNames } from '../../../shared/data/tables';
import { PENDING_ENTRY_PATTERN } from '../key-actions-stream';
import { AGGREGATED_EVENT_NAMES, MAX_BATCHING_WINDOW_SECONDS } from '../usage-aggregation';
import { asList, read, resourceOf, resourcesOf, rule, targetOf, type Json } from './rule';
import { definitionOf } from './tables';

/** Each streamed table's consumer is invoked only for what its code handles. */
const EXPECTED_FILTERS: Partial<Record<keyof TableNames, { pattern: Json; handles: string }>> = {
  usage: {
    pattern: { eventName: [...AGGREGATED_EVENT_NAMES] },
    handles: 'inserted usage records (TTL deletions do not invoke it)',
  },
  keys: { pattern: PENDING_ENTRY_PATTERN, handles: 'key items carrying a pending activity entry' },
};

/** SQS's longest retention: a failed batch waits two weeks for someone to look. */
const FOURTEEN_DAYS = 14 * 24 * 3600;

/** The logical id of the table whose stream a mapping reads (`Fn::GetAtt [table, StreamArn]`), if it reads one. */
export const streamOf = (mapping: CfnEventSourceMapping): string | undefined => {
  const [table, attribute] = asList<string>(read(mapping, mapping.eventSourceArn)?.['Fn::GetAtt']);
  return attribute === 'StreamArn' ? table : undefined;
};

const inBounds = (value: unknown, min: number, max: number) =>
  Number.isInteger(value) && (value as number) >= min && (value as number) <= max;

/** A rule on each mapping that reads a DynamoDB stream. */
const streamRule = (
  name: string,
  explanation: string,
  problem: (mapping: CfnEventSourceMapping) => string | undefined,
) => rule(CfnEventSourceMapping, name, explanation, (mapping) => (streamOf(mapping) ? problem(mapping) : undefined));

const destinationOf = (mapping: CfnEventSourceMapping) =>
  targetOf(mapping, read(mapping, mapping.destinationConfig)?.onFailure?.destination);

export const streamRules = [
  rule(CfnTable, 'stream-consumed', 'every table with a stream feeds a function', (table) =>
    table.streamSpecification !== undefined &&
    !resourcesOf(table, CfnEventSourceMapping).some(
      (mapping) => resourceOf(table, streamOf(mapping), CfnTable) === table,
    )
      ? 'its stream feeds no function (no event source mapping reads it)'
      : undefined,
  ),
  streamRule('stream-source', 'every mapping reads the stream of a table of the stack', (mapping) =>
    resourceOf(mapping, streamOf(mapping), CfnTable)?.streamSpecification
      ? undefined
      : 'reads the stream of a table that has none',
  ),
  streamRule('stream-enabled', 'the mapping is enabled', (mapping) =>
    read(mapping, mapping.enabled) === false ? 'the mapping is disabled: nothing reads the stream' : undefined,
  ),
  streamRule(
    'stream-starting-position',
    'it starts at the oldest record (TRIM_HORIZON): nothing written before it is skipped',
    (mapping) =>
      mapping.startingPosition === 'TRIM_HORIZON'
        ? undefined
        : `starting position ${mapping.startingPosition}, expected TRIM_HORIZON`,
  ),
  streamRule(
    'stream-batching',
    `batch size 1-1000 and a batching window of at most ${MAX_BATCHING_WINDOW_SECONDS} s (the lag target)`,
    (mapping) => {
      const size = read(mapping, mapping.batchSize) ?? 100;
      if (!inBounds(size, 1, 1000)) return `batch size ${size} is outside 1-1000`;
      const window = read(mapping, mapping.maximumBatchingWindowInSeconds);
      return inBounds(window, 0, MAX_BATCHING_WINDOW_SECONDS)
        ? undefined
        : `batching window ${JSON.stringify(window ?? 'none')} s, expected 0-${MAX_BATCHING_WINDOW_SECONDS}`;
    },
  ),
  streamRule(
    'stream-partial-batch',
    'partial batch responses (ReportBatchItemFailures), which the handler returns',
    (mapping) =>
      asList(read(mapping, mapping.functionResponseTypes)).includes('ReportBatchItemFailures')
        ? undefined
        : 'no ReportBatchItemFailures: a failed record would be taken as success',
  ),
  streamRule('stream-bisect', 'a failing batch is split in two (BisectBatchOnFunctionError)', (mapping) =>
    read(mapping, mapping.bisectBatchOnFunctionError) === true
      ? undefined
      : 'BisectBatchOnFunctionError is off: one bad record holds back its whole batch',
  ),
  streamRule(
    'stream-retries',
    'bounded retries and record age (neither -1 nor absent, which mean forever)',
    (mapping) => {
      const retries = read(mapping, mapping.maximumRetryAttempts);
      if (!inBounds(retries, 0, 10_000))
        return `retries ${JSON.stringify(retries ?? 'unbounded')}: a poisoned batch would block its shard for the stream's 24 h`;
      const age = read(mapping, mapping.maximumRecordAgeInSeconds);
      return inBounds(age, 60, 604_800)
        ? undefined
        : `record age ${JSON.stringify(age ?? 'unbounded')}: expected 60-604800 s`;
    },
  ),
  streamRule(
    'stream-failure-destination',
    'what still fails goes to an SQS queue or SNS topic of the stack',
    (mapping) => {
      const target = destinationOf(mapping);
      if (!target) return 'no on-failure destination: a batch that fails past its retries is lost';
      return resourceOf(mapping, target, CfnQueue) || resourceOf(mapping, target, CfnTopic)
        ? undefined
        : `on-failure destination ${target} is not a queue or topic of the stack`;
    },
  ),
  streamRule('stream-failure-queue', 'a failure queue is encrypted and keeps messages 14 days', (mapping) => {
    const target = destinationOf(mapping);
    const queue = resourceOf(mapping, target, CfnQueue);
    if (!queue) return undefined;
    if (read(queue, queue.sqsManagedSseEnabled) !== true && !queue.kmsMasterKeyId)
      return `failure queue ${target} is not encrypted`;
    const kept = read(queue, queue.messageRetentionPeriod) ?? 345_600;
    return kept === FOURTEEN_DAYS
      ? undefined
      : `failure queue ${target} keeps messages ${kept} s, expected ${FOURTEEN_DAYS} (14 days)`;
  }),
  streamRule(
    'stream-filter',
    `only the records its code handles invoke a consumer: ${Object.values(EXPECTED_FILTERS)
      .map((expected) => expected.handles)
      .join('; ')}`,
    (mapping) => {
      const table = resourceOf(mapping, streamOf(mapping), CfnTable);
      const expected = table && EXPECTED_FILTERS[definitionOf(table)?.name ?? 'branchData'];
      if (!expected) return undefined;
      const patterns = asList<Json>(read(mapping, mapping.filterCriteria)?.filters).map((filter) =>
        String(filter.pattern),
      );
      if (patterns.length === 0)
        return `no readable filter: every record invokes the function, not only ${expected.handles}`;
      const wanted = JSON.stringify(expected.pattern);
      const found = patterns.map((pattern) => JSON.stringify(JSON.parse(pattern))).join(' or ');
      return found === wanted ? undefined : `filter ${found}, expected ${wanted}`;
    },
  ),
];
