/**
 * Alarms for what an operator must hear about: the API answering 5xx, a high 4xx rate (429s
 * included) and a slow p99; functions failing, throttled or running near their timeout; DynamoDB
 * throttling; usage records that could not be stored, rate-limit counters that could not be
 * updated and stream records that could not be aggregated (the Powertools metrics the code
 * emits). All go to one SNS topic when the deployer gives one.
 */
import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import { ROLLUP_FAILED_METRIC, ROLLUP_UNREADABLE_METRIC } from '../../shared/lambda/usage-stream';
import type * as sns from 'aws-cdk-lib/aws-sns';
import { Construct } from 'constructs';
import {
  METRICS_NAMESPACE,
  RATE_LIMIT_COUNTER_FAILED_METRIC,
  SERVICE_NAME,
  USAGE_WRITE_FAILED_METRIC,
  RATE_LIMITED_METRIC,
} from '../../shared/domain/telemetry';

/** A table and its global secondary indexes, which DynamoDB meters and throttles apart from it. */
export interface MonitoredTable {
  readonly table: dynamodb.ITable;
  /** Names of the table's global secondary indexes (shared/data/tables.ts). */
  readonly indexNames: readonly string[];
}

export interface MonitoringProps {
  readonly stage: apigw.IHttpStage;
  /** Functions by a short name used in alarm ids and descriptions (their timeout sets the duration alarm). */
  readonly functions: Readonly<Record<string, lambda.Function>>;
  /** Tables, with their indexes, by a short name used in alarm ids and descriptions. */
  readonly tables: Readonly<Record<string, MonitoredTable>>;
  /**
   * Alarm when this percentage of requests in two consecutive 5-minute periods is a 5xx.
   * @default 5
   */
  readonly serverErrorRatePercent?: number;
  /**
   * Alarm when this percentage of requests in two consecutive 5-minute periods is a 4xx (a 429
   * from a key's rate limit is one): a broken integration or a flood of refused calls.
   * @default 25
   */
  readonly clientErrorRatePercent?: number;
  /**
   * Alarm when this percentage of requests in two consecutive 5-minute periods is a 429: keys
   * running into their limits (docs/capacity.md "Per key").
   * @default 10
   */
  readonly rateLimitedRatePercent?: number;
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
/** A function's maximum duration above this share of its timeout raises its alarm. */
const NEAR_TIMEOUT = 0.8;

/** Throttled read and write events of a table, or with `indexName`, of that index only. */
const throttleEvents = (table: dynamodb.ITable, label: string, indexName?: string) => {
  const dimensionsMap = {
    TableName: table.tableName,
    ...(indexName === undefined ? {} : { GlobalSecondaryIndexName: indexName }),
  };
  const events = (metricName: string) => table.metric(metricName, { period: PERIOD, statistic: 'Sum', dimensionsMap });
  return new cloudwatch.MathExpression({
    expression: 'FILL(reads, 0) + FILL(writes, 0)',
    usingMetrics: { reads: events('ReadThrottleEvents'), writes: events('WriteThrottleEvents') },
    label,
    period: PERIOD,
  });
};
/** A metric the functions emit through Powertools (shared/lambda/observability.ts). */
const serviceMetric = (metricName: string) =>
  new cloudwatch.Metric({
    namespace: METRICS_NAMESPACE,
    metricName,
    dimensionsMap: { service: SERVICE_NAME },
    statistic: 'Sum',
    period: PERIOD,
  });

/** The metrics the functions emit when something needs an operator: any one of them alarms. */
const SERVICE_METRIC_ALARMS: Record<string, { metric: string; description: string }> = {
  UsageRecordWriteFailed: {
    metric: USAGE_WRITE_FAILED_METRIC,
    description:
      'Usage records could not be stored after retries; each one is in the functions\u2019 error log for replay.',
  },
  RateLimitCounterFailed: {
    metric: RATE_LIMIT_COUNTER_FAILED_METRIC,
    description:
      'Rate-limit counters could not be updated: those calls were admitted without a limit (fail open, docs/decisions.md "Rate limits").',
  },
  RollupRecordsUnreadable: {
    metric: ROLLUP_UNREADABLE_METRIC,
    description:
      'Usage stream records could not be aggregated (not usage records); they are in the aggregator\u2019s warning log (docs/usage-rollups.md).',
  },
  RollupRecordsFailed: {
    metric: ROLLUP_FAILED_METRIC,
    description:
      'Usage records failed to apply to the rollups and were handed back for retry; past the retries they go to the dead-letter queue (docs/usage-rollups.md "Failures").',
  },
};

export class Monitoring extends Construct {
  readonly alarms: cloudwatch.Alarm[] = [];
  private readonly alarmTopic?: sns.ITopic;

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);
    this.alarmTopic = props.alarmTopic;
    const { stage } = props;

    const rate = (errors: cloudwatch.IMetric, label: string) =>
      new cloudwatch.MathExpression({
        expression: 'IF(requests > 0, 100 * errors / requests, 0)',
        usingMetrics: { errors, requests: stage.metricCount({ period: PERIOD, statistic: 'Sum' }) },
        label,
        period: PERIOD,
      });
    this.add('Api5xxRate', rate(stage.metricServerError({ period: PERIOD, statistic: 'Sum' }), '5xx rate (%)'), {
      threshold: props.serverErrorRatePercent ?? 5,
      evaluationPeriods: 2,
      description: 'More than the threshold percentage of API requests answered 5xx in two 5-minute periods.',
    });
    this.add('Api4xxRate', rate(stage.metricClientError({ period: PERIOD, statistic: 'Sum' }), '4xx rate (%)'), {
      threshold: props.clientErrorRatePercent ?? 25,
      evaluationPeriods: 2,
      description:
        'More than the threshold percentage of API requests answered 4xx (429 rate limits included) in two 5-minute periods.',
    });
    this.add('Api429Rate', rate(serviceMetric(RATE_LIMITED_METRIC), '429 rate (%)'), {
      threshold: props.rateLimitedRatePercent ?? 10,
      evaluationPeriods: 2,
      description:
        'More than the threshold percentage of API requests answered 429 rate_limited in two 5-minute periods.',
    });
    this.add('ApiLatencyP99', stage.metricLatency({ period: PERIOD, statistic: 'p99' }), {
      threshold: props.latencyP99Ms ?? 1000,
      evaluationPeriods: 2,
      description: 'The API\u2019s p99 latency stayed above the threshold (ms) for two 5-minute periods.',
    });

    for (const [name, fn] of Object.entries(props.functions)) {
      this.add(`${name}Errors`, fn.metricErrors({ period: PERIOD, statistic: 'Sum' }), {
        threshold: 0,
        description: `The ${name} function failed (an unhandled error or a timeout, not an API error response).`,
      });
      this.add(`${name}Throttles`, fn.metricThrottles({ period: PERIOD, statistic: 'Sum' }), {
        threshold: 0,
        description: `Invocations of the ${name} function were throttled (account or function concurrency).`,
      });
      // Lambda stops a function at its timeout: a maximum near it means some calls are about to fail.
      const timeoutMs = (fn.timeout?.toSeconds() ?? 3) * 1000;
      this.add(`${name}DurationNearTimeout`, fn.metricDuration({ period: PERIOD, statistic: 'Maximum' }), {
        threshold: Math.round(timeoutMs * NEAR_TIMEOUT),
        description: `The ${name} function ran longer than ${NEAR_TIMEOUT * 100}% of its ${timeoutMs} ms timeout.`,
      });
    }

    // ReadThrottleEvents and WriteThrottleEvents with only the TableName dimension count the
    // table's own throttling, never an index's: each index is metered under TableName and
    // GlobalSecondaryIndexName (docs/deploy.md, "Alarms"). Hence one alarm per table and one per index.
    for (const [name, { table, indexNames }] of Object.entries(props.tables)) {
      this.add(`${name}TableThrottles`, throttleEvents(table, `${name} throttle events`), {
        threshold: 0,
        description: `DynamoDB throttled reads or writes on the ${name} table.`,
      });
      for (const indexName of indexNames) {
        const label = `${name} ${indexName} index throttle events`;
        this.add(`${name}Index-${indexName}-Throttles`, throttleEvents(table, label, indexName), {
          threshold: 0,
          description: `DynamoDB throttled reads or writes on the ${indexName} index of the ${name} table.`,
        });
      }
    }

    for (const [id, { metric, description }] of Object.entries(SERVICE_METRIC_ALARMS)) {
      this.add(id, serviceMetric(metric), { threshold: 0, description });
    }
  }

  private add(
    id: string,
    metric: cloudwatch.IMetric,
    options: { threshold: number; description: string; evaluationPeriods?: number },
  ): void {
    this.alarms.push(thresholdAlarm(this, id, { metric, ...options, topic: this.alarmTopic }));
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
