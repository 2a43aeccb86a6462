/**
 * The alarms an operator acts on, each failure cause watched once (docs/deploy.md "Alarms"): the
 * API's 5xx rate and p99 latency, which every endpoint's errors, throttles, timeouts and failed
 * reads reach; the failure metrics the functions emit when a call or batch succeeds regardless
 * (FAILURE_METRICS); and the errors of functions nothing else sees fail (the daily key expiry run).
 * The stream consumers' own alarms are lib/infra/stream-consumer.ts's. All notify one SNS topic.
 */
import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sns from 'aws-cdk-lib/aws-sns';
import { Construct } from 'constructs';
import { FAILURE_METRICS, METRICS_NAMESPACE, SERVICE_NAME } from '../../shared/domain/telemetry';

export interface MonitoringProps {
  readonly stage: apigw.IHttpStage;
  /** Functions no other alarm sees fail (not behind the API, not a stream consumer), by a short name. */
  readonly unwatchedFunctions: Readonly<Record<string, lambda.IFunction>>;
  /**
   * Alarm when this percentage of requests in two consecutive 5-minute periods is a 5xx.
   * @default 5
   */
  readonly serverErrorRatePercent?: number;
  /**
   * Alarm when the API's p99 latency stays above this many milliseconds for two 5-minute periods.
   * @default 1000
   */
  readonly latencyP99Ms?: number;
  /**
   * Topic notified when an alarm fires and when it recovers.
   * @default - alarms only show in the CloudWatch console
   */
  readonly alarmTopic?: sns.ITopic;
}

const PERIOD = Duration.minutes(5);

export class Monitoring extends Construct {
  readonly alarms: cloudwatch.Alarm[] = [];

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);
    const { stage, alarmTopic: topic } = props;
    const add = (name: string, metric: cloudwatch.IMetric, threshold: number, description: string, periods = 1) =>
      this.alarms.push(
        thresholdAlarm(this, name, { metric, threshold, description, evaluationPeriods: periods, topic }),
      );

    const serverErrors = new cloudwatch.MathExpression({
      expression: 'IF(requests > 0, 100 * errors / requests, 0)',
      usingMetrics: {
        errors: stage.metricServerError({ period: PERIOD, statistic: 'Sum' }),
        requests: stage.metricCount({ period: PERIOD, statistic: 'Sum' }),
      },
      label: '5xx rate (%)',
      period: PERIOD,
    });
    add(
      'Api5xxRate',
      serverErrors,
      props.serverErrorRatePercent ?? 5,
      'More than the threshold percentage of API requests answered 5xx in two 5-minute periods: an endpoint ' +
        'failed, timed out or was throttled, or its data read failed (docs/deploy.md "Alarms").',
      2,
    );
    add(
      'ApiLatencyP99',
      stage.metricLatency({ period: PERIOD, statistic: 'p99' }),
      props.latencyP99Ms ?? 1000,
      'The API\u2019s p99 latency stayed above the threshold (ms) for two 5-minute periods: endpoints slow or near their timeout.',
      2,
    );
    for (const [metricName, description] of Object.entries(FAILURE_METRICS)) {
      const metric = new cloudwatch.Metric({
        namespace: METRICS_NAMESPACE,
        metricName,
        dimensionsMap: { service: SERVICE_NAME },
        statistic: 'Sum',
        period: PERIOD,
      });
      add(metricName, metric, 0, description);
    }
    for (const [name, fn] of Object.entries(props.unwatchedFunctions)) {
      const description = `The ${name} function failed (an unhandled error or a timeout); no other alarm sees it.`;
      add(`${name}Errors`, fn.metricErrors({ period: PERIOD, statistic: 'Sum' }), 0, description);
    }
  }
}

/**
 * An alarm when `metric` goes above `threshold` (for `evaluationPeriods`, default 1), notifying
 * `topic` when it fires and when it recovers.
 */
export const thresholdAlarm = (
  scope: Construct,
  id: string,
  props: {
    metric: cloudwatch.IMetric;
    threshold: number;
    description: string;
    evaluationPeriods?: number;
    topic?: sns.ITopic | undefined;
  },
): cloudwatch.Alarm => {
  const alarm = new cloudwatch.Alarm(scope, id, {
    metric: props.metric,
    threshold: props.threshold,
    evaluationPeriods: props.evaluationPeriods ?? 1,
    comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    // No traffic, no failures: missing data is not a breach.
    treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    alarmDescription: props.description,
  });
  if (props.topic) {
    alarm.addAlarmAction(new actions.SnsAction(props.topic));
    alarm.addOkAction(new actions.SnsAction(props.topic));
  }
  return alarm;
};
