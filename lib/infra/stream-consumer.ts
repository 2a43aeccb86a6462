/**
 * What every stream consumer of the stack shares (lib/infra/usage-aggregation.ts,
 * lib/infra/key-actions-stream.ts): an event source mapping that passes only the records its code
 * handles, splits a failing batch, retries it a bounded number of times for a bounded age and
 * sends what still fails to a dead-letter queue; and alarms on the consumer falling behind its
 * stream and on anything dead-lettered (docs/deploy.md "Alarms").
 */
import { Duration, Validations } from 'aws-cdk-lib';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsDlq } from 'aws-cdk-lib/aws-lambda-event-sources';
import type * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import type { ApiFunction } from './api-function';
import { thresholdAlarm } from './monitoring';

export interface StreamConsumerProps {
  /** The table whose stream feeds the consumer. */
  readonly table: dynamodb.ITable;
  /** Its name in the reason of the acknowledged wildcard (`the usage table`). */
  readonly tableName: string;
  readonly batchSize: number;
  readonly maxBatchingWindow: Duration;
  readonly retryAttempts: number;
  readonly maxRecordAge: Duration;
  /** The records that invoke the consumer (Lambda's filter pattern). */
  readonly filter: Record<string, unknown>;
  /** What an operator does with what the dead-letter queue holds. */
  readonly recovery: string;
  /** Alarm when the newest batch read is older than this. */
  readonly maxIteratorAge: Duration;
  /** What falling behind means, e.g. "The rollups aggregator is … behind the usage table's stream." */
  readonly lagDescription: string;
  /** What dead letters mean and what to do about them. */
  readonly deadLettersDescription: string;
  readonly topic?: sns.ITopic | undefined;
}

/** The stream of `props.table` feeding `consumer`, with its dead-letter queue and its two alarms, made in `scope`. */
export const consumeStream = (scope: Construct, consumer: ApiFunction, props: StreamConsumerProps) => {
  const deadLetterQueue = new sqs.Queue(scope, 'DeadLetterQueue', {
    encryption: sqs.QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    retentionPeriod: Duration.days(14),
  });
  Validations.of(deadLetterQueue).acknowledge({
    id: 'AwsSolutions-SQS3',
    reason: `This queue is itself the dead-letter destination of a stream event source mapping; ${props.recovery}`,
  });
  const eventSource = new DynamoEventSource(props.table, {
    startingPosition: lambda.StartingPosition.TRIM_HORIZON,
    batchSize: props.batchSize,
    maxBatchingWindow: props.maxBatchingWindow,
    bisectBatchOnError: true,
    retryAttempts: props.retryAttempts,
    maxRecordAge: props.maxRecordAge,
    reportBatchItemFailures: true,
    filters: [lambda.FilterCriteria.filter(props.filter)],
    onFailure: new SqsDlq(deadLetterQueue),
  });
  consumer.function.addEventSource(eventSource);
  Validations.of(consumer.role).acknowledge({
    id: 'AwsSolutions-IAM5[Resource::*]',
    reason:
      'X-Ray tracing actions, and dynamodb:ListStreams that the stream event source needs, support no ' +
      `resource-level permissions; the stream read actions name ${props.tableName} stream.`,
  });
  const minute = { period: Duration.minutes(1), statistic: 'Maximum' };
  const alarms: cloudwatch.Alarm[] = [
    thresholdAlarm(scope, 'IteratorAge', {
      metric: consumer.function.metric('IteratorAge', minute),
      threshold: props.maxIteratorAge.toMilliseconds(),
      description: props.lagDescription,
      topic: props.topic,
    }),
    thresholdAlarm(scope, 'DeadLetters', {
      metric: deadLetterQueue.metricApproximateNumberOfMessagesVisible(minute),
      threshold: 0,
      description: props.deadLettersDescription,
      topic: props.topic,
    }),
  ];
  return { deadLetterQueue, eventSource, alarms };
};
