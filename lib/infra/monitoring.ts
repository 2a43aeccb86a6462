/**
 * Alarms for what an operator must hear about: the API answering 5xx, functions failing or
 * throttled, DynamoDB throttling, and usage records that could not be stored (the Powertools
 * metric the usage middleware emits). All go to one optional SNS topic.
 */
import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sns from 'aws-cdk-lib/aws-sns';
import { Construct } from 'constructs';
import {
  METRICS_NAMESPACE,
  RATE_LIMIT_COUNTER_FAILED_METRIC,
  SERVICE_NAME,
  USAGE_WRITE_FAILED_METRIC,
} from '../../shared/domain/telemetry';

/** A table and its global secondary indexes, which DynamoDB meters and throttles apart from it. */
export interface MonitoredTable {
  readonly table: dynamodb.ITable;
  /** Names of the table's global secondary indexes (shared/data/tables.ts). */
  readonly indexNames: readonly string[];
}

export interface MonitoringProps {
  readonly stage: apigw.IHttpStage;
  /** Functions by a short name used in alarm ids and descriptions. */
  readonly functions: Readonly<Record<string, lambda.IFunction>>;
  /** Tables, with their indexes, by a short name used in alarm ids and descriptions. */
  readonly tables: Readonly<Record<string, MonitoredTable>>;
  /**
   * Alarm when this percentage of requests in two consecutive 5-minute periods is a 5xx.
   * @default 5
   */
  readonly serverErrorRatePercent?: number;
  /**
   * Topic notified when an alarm fires and when it recovers.
   * @default - alarms only show in the CloudWatch console
   */
  readonly alarmTopic?: sns.ITopic;
}

const PERIOD = Duration.minutes(5);

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

export class Monitoring extends Construct {
  readonly alarms: cloudwatch.Alarm[] = [];
  private readonly alarmTopic?: sns.ITopic;

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);
    this.alarmTopic = props.alarmTopic;
    const { stage } = props;

    const serverErrorRate = new cloudwatch.MathExpression({
      expression: 'IF(requests > 0, 100 * errors / requests, 0)',
      usingMetrics: {
        errors: stage.metricServerError({ period: PERIOD, statistic: 'Sum' }),
        requests: stage.metricCount({ period: PERIOD, statistic: 'Sum' }),
      },
      label: '5xx rate (%)',
      period: PERIOD,
    });
    this.add('Api5xxRate', serverErrorRate, {
      threshold: props.serverErrorRatePercent ?? 5,
      evaluationPeriods: 2,
      description: 'More than the threshold percentage of API requests answered 5xx in two 5-minute periods.',
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

    this.add('UsageRecordWriteFailed', serviceMetric(USAGE_WRITE_FAILED_METRIC), {
      threshold: 0,
      description:
        'Usage records could not be stored after retries; each one is in the functions\u2019 error log for replay.',
    });
    this.add('RateLimitCounterFailed', serviceMetric(RATE_LIMIT_COUNTER_FAILED_METRIC), {
      threshold: 0,
      description:
        'Rate-limit counters could not be updated: those calls were admitted without a limit (fail open, docs/decisions.md "Rate limits").',
    });
  }

  private add(
    id: string,
    metric: cloudwatch.IMetric,
    options: { threshold: number; description: string; evaluationPeriods?: number },
  ): void {
    const alarm = new cloudwatch.Alarm(this, id, {
      metric,
      threshold: options.threshold,
      evaluationPeriods: options.evaluationPeriods ?? 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      // No traffic, no failures: missing data is not a breach.
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      alarmDescription: options.description,
    });
    if (this.alarmTopic) {
      alarm.addAlarmAction(new actions.SnsAction(this.alarmTopic));
      alarm.addOkAction(new actions.SnsAction(this.alarmTopic));
    }
    this.alarms.push(alarm);
  }
}
