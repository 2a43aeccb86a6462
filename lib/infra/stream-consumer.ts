/**
 * What every stream consumer of the stack shares (lib/infra/usage-aggregation.ts,
 * lib/infra/key-actions-stream.ts): a dead-letter queue for the batches that fail past their
 * retries, and alarms on the consumer falling behind its stream and on anything dead-lettered.
 */
import { Duration, Validations } from 'aws-cdk-lib';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { thresholdAlarm } from './monitoring';

/** An encrypted queue kept 14 days; `recovery` says what an operator does with what it holds. */
export const deadLetterQueue = (scope: Construct, recovery: string): sqs.Queue => {
  const queue = new sqs.Queue(scope, 'DeadLetterQueue', {
    encryption: sqs.QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    retentionPeriod: Duration.days(14),
  });
  Validations.of(queue).acknowledge({
    id: 'AwsSolutions-SQS3',
    reason: `This queue is itself the dead-letter destination of a stream event source mapping; ${recovery}`,
  });
  return queue;
};

export interface StreamAlarmsProps {
  readonly consumer: lambda.IFunction;
  readonly deadLetterQueue: sqs.IQueue;
  /** Alarm when the newest batch read is older than this. */
  readonly maxIteratorAge: Duration;
  /** What falling behind means, e.g. "The rollups aggregator is … behind the usage table's stream." */
  readonly lagDescription: string;
  /** What dead letters mean and what to do about them. */
  readonly deadLettersDescription: string;
  readonly topic?: sns.ITopic | undefined;
}

/** The consumer's iterator age above `maxIteratorAge`, and any message in its dead-letter queue. */
export const streamAlarms = (scope: Construct, props: StreamAlarmsProps): cloudwatch.Alarm[] => [
  thresholdAlarm(scope, 'IteratorAge', {
    metric: props.consumer.metric('IteratorAge', { period: Duration.minutes(1), statistic: 'Maximum' }),
    threshold: props.maxIteratorAge.toMilliseconds(),
    description: props.lagDescription,
    topic: props.topic,
  }),
  thresholdAlarm(scope, 'DeadLetters', {
    metric: props.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
      period: Duration.minutes(1),
      statistic: 'Maximum',
    }),
    threshold: 0,
    description: props.deadLettersDescription,
    topic: props.topic,
  }),
];
