/**
 * The rollups pipeline (docs/usage-rollups.md): the usage table's stream feeds the aggregator
 * function, only inserted usage records (TTL deletions never invoke it), in batches; what fails
 * past the retries goes to a dead-letter queue (lib/infra/stream-consumer.ts). Alarms fire when
 * the stream falls behind (iterator age) and when anything reaches the queue.
 */
import { Duration } from 'aws-cdk-lib';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type { DynamoEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { TABLE_ENV } from '../../shared/config/env';
import { DEFAULT_ROLLUP_RETENTION_DAYS } from '../../shared/domain/rollups';
import { AGGREGATOR_ENTRY } from '../../shared/lambda/usage-stream';
import { ApiFunction, loggingOf, type FunctionLogging } from './api-function';
import { consumeStream } from './stream-consumer';

/** The stream events the aggregator handles: a usage record is only ever inserted (shared/lambda/usage-stream.ts). */
export const AGGREGATED_EVENT_NAMES = ['INSERT'] as const;
/** Longest batching window: with the processing time it bounds the rollups' lag (docs/usage-rollups.md). */
export const MAX_BATCHING_WINDOW_SECONDS = 60;
/** The aggregator's timeout: applying a batch is a few dozen UpdateItems in parallel, each within the SDK deadline. */
export const AGGREGATOR_TIMEOUT = Duration.seconds(30);

export interface UsageAggregationProps extends FunctionLogging {
  /** The usage table; it must have a stream (NEW_IMAGE). */
  readonly usageTable: dynamodb.ITable;
  readonly rollupsTable: dynamodb.ITable;
  /**
   * Days DynamoDB TTL keeps an hour item (`ROLLUP_RETENTION_DAYS`).
   * @default 400
   */
  readonly rollupRetentionDays?: number;
  /**
   * Stream records per invocation (1-1000).
   * @default 100
   */
  readonly batchSize?: number;
  /**
   * Longest wait to fill a batch; with the processing time it bounds the lag (at most 60 s).
   * @default Duration.seconds(30): at low volume a batch then holds calls enough to spread its writes (docs/decisions.md "Cost")
   */
  readonly maxBatchingWindow?: Duration;
  /**
   * Retries of a failing batch (each split in two) before it goes to the dead-letter queue (0-10000).
   * @default 5
   */
  readonly retryAttempts?: number;
  /**
   * Oldest record the mapping still sends; older ones go to the dead-letter queue (60 s - 7 days).
   * @default Duration.hours(6)
   */
  readonly maxRecordAge?: Duration;
  /**
   * Concurrent executions reserved for its function (lib/infra/concurrency.ts).
   * @default - none
   */
  readonly reservedConcurrency?: number;
  /**
   * Alarm when the newest batch read is older than this (the lag target).
   * @default Duration.seconds(60)
   */
  readonly maxIteratorAge?: Duration;
  /**
   * Topic notified when an alarm fires and when it recovers.
   * @default - no alarm actions
   */
  readonly alarmTopic?: sns.ITopic;
}

export class InvalidUsageAggregationPropsError extends Error {
  override name = 'InvalidUsageAggregationPropsError';
}

const check = (ok: boolean, message: string) => {
  if (!ok) throw new InvalidUsageAggregationPropsError(`UsageAggregation: ${message}`);
};
const isIntegerIn = (value: number, min: number, max: number) =>
  Number.isInteger(value) && value >= min && value <= max;

/** Applies the defaults and rejects a setting out of its documented range. */
const settingsOf = (props: UsageAggregationProps) => {
  const settings = {
    retentionDays: props.rollupRetentionDays ?? DEFAULT_ROLLUP_RETENTION_DAYS,
    batchSize: props.batchSize ?? 100,
    window: props.maxBatchingWindow ?? Duration.seconds(30),
    retryAttempts: props.retryAttempts ?? 5,
    maxIteratorAge: props.maxIteratorAge ?? Duration.seconds(60),
    maxRecordAge: props.maxRecordAge ?? Duration.hours(6),
  };
  const { retentionDays, batchSize, window, retryAttempts, maxIteratorAge, maxRecordAge } = settings;
  check(isIntegerIn(retentionDays, 1, 100_000), `rollupRetentionDays must be a positive integer, got ${retentionDays}`);
  check(isIntegerIn(batchSize, 1, 1000), `batchSize must be an integer from 1 to 1000, got ${batchSize}`);
  check(
    window.toSeconds() <= MAX_BATCHING_WINDOW_SECONDS,
    `maxBatchingWindow must be at most 60 s (the lag target), got ${window.toHumanString()}`,
  );
  check(
    isIntegerIn(retryAttempts, 0, 10_000),
    `retryAttempts must be an integer from 0 to 10000, got ${retryAttempts}`,
  );
  check(maxIteratorAge.toSeconds() >= 1, 'maxIteratorAge must be at least 1 second');
  check(
    maxRecordAge.toSeconds() >= 60 && maxRecordAge.toSeconds() <= 604_800,
    `maxRecordAge must be from 60 s to 7 days, got ${maxRecordAge.toHumanString()}`,
  );
  check(props.usageTable.tableStreamArn !== undefined, 'the usage table has no stream');
  return settings;
};

export class UsageAggregation extends Construct {
  readonly function: ApiFunction;
  readonly deadLetterQueue: sqs.Queue;
  readonly eventSource: DynamoEventSource;
  readonly alarms: cloudwatch.Alarm[];

  constructor(scope: Construct, id: string, props: UsageAggregationProps) {
    super(scope, id);
    const settings = settingsOf(props);
    this.function = this.aggregator(props, settings.retentionDays);
    ({
      deadLetterQueue: this.deadLetterQueue,
      eventSource: this.eventSource,
      alarms: this.alarms,
    } = consumeStream(this, this.function, {
      table: props.usageTable,
      tableName: 'the usage table',
      batchSize: settings.batchSize,
      maxBatchingWindow: settings.window,
      retryAttempts: settings.retryAttempts,
      maxRecordAge: settings.maxRecordAge,
      filter: { eventName: lambda.FilterRule.isEqual(AGGREGATED_EVENT_NAMES[0]) },
      recovery: 'what it holds (stream batch pointers) is alarmed on and recoverable with `branch-api usage rebuild`.',
      maxIteratorAge: settings.maxIteratorAge,
      lagDescription: `The rollups aggregator is more than ${settings.maxIteratorAge.toHumanString()} behind the usage table's stream.`,
      deadLettersDescription:
        'Usage stream batches failed past their retries and are in the dead-letter queue; ' +
        'rebuild the rollups of their period (docs/usage-rollups.md).',
      topic: props.alarmTopic,
    }));
  }

  /** The aggregator function, allowed the one table call it makes. */
  private aggregator(props: UsageAggregationProps, retentionDays: number): ApiFunction {
    const fn = new ApiFunction(this, 'Aggregator', {
      entry: AGGREGATOR_ENTRY,
      timeout: AGGREGATOR_TIMEOUT,
      reservedConcurrency: props.reservedConcurrency,
      ...loggingOf(props),
      environment: {
        [TABLE_ENV.rollups]: props.rollupsTable.tableName,
        ROLLUP_RETENTION_DAYS: String(retentionDays),
      },
    });
    // The only table call the aggregator makes (shared/data/repositories/rollups.ts): no read, no index.
    fn.role.addToPolicy(
      new iam.PolicyStatement({
        actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem'],
        resources: [props.rollupsTable.tableArn],
      }),
    );
    return fn;
  }
}
