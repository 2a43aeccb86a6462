/**
 * What every stream consumer of the stack shares (lib/infra/usage-aggregation.ts,
 * lib/infra/key-actions-stream.ts): a dead-letter queue for the batches that fail past their
 * retries, and alarms that notify the topic when they fire and when they recover.
 */
import { Duration, Validations } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';

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

/** An alarm when `metric` goes above `threshold` in one period, missing data not breaching. */
export const thresholdAlarm = (
  scope: Construct,
  id: string,
  props: { metric: cloudwatch.IMetric; threshold: number; description: string; topic?: sns.ITopic | undefined },
): cloudwatch.Alarm => {
  const alarm = new cloudwatch.Alarm(scope, id, {
    metric: props.metric,
    threshold: props.threshold,
    evaluationPeriods: 1,
    comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    alarmDescription: props.description,
  });
  if (props.topic) {
    alarm.addAlarmAction(new actions.SnsAction(props.topic));
    alarm.addOkAction(new actions.SnsAction(props.topic));
  }
  return alarm;
};
