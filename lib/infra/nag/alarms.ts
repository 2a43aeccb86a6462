/**
 * Alarms: each on a resource of the stack with dimensions AWS publishes the metric with; every
 * function, stream, failure queue, table (and each of its indexes) and the API watched; thresholds
 * that can be crossed; missing data treated as designed (no traffic is not a failure); every alarm
 * notifying the deployer's topic when there is one.
 */
import { CfnApi } from 'aws-cdk-lib/aws-apigatewayv2';
import { CfnAlarm } from 'aws-cdk-lib/aws-cloudwatch';
import { CfnTable } from 'aws-cdk-lib/aws-dynamodb';
import { CfnEventSourceMapping, CfnFunction } from 'aws-cdk-lib/aws-lambda';
import { CfnQueue } from 'aws-cdk-lib/aws-sqs';
import type { CfnResource } from 'aws-cdk-lib';
import {
  METRICS_NAMESPACE,
  RATE_LIMIT_COUNTER_FAILED_METRIC,
  USAGE_WRITE_FAILED_METRIC,
} from '../../../shared/domain/telemetry';
import { ROLLUP_UNREADABLE_METRIC } from '../../../shared/lambda/usage-stream';
import { asList, idOf, intentOf, read, resourceOf, resourcesOf, rule, targetOf, typeOf, type Json } from './rule';

/** Custom metrics that mean something was lost or let through: each must have an alarm. */
const ALARMED_CUSTOM_METRICS = [USAGE_WRITE_FAILED_METRIC, RATE_LIMIT_COUNTER_FAILED_METRIC, ROLLUP_UNREADABLE_METRIC];

/**
 * Dimension sets AWS documents for the AWS metrics alarms here may watch (CloudWatch metrics pages
 * of Lambda, API Gateway HTTP APIs, DynamoDB and SQS). A metric not listed is a finding: add it
 * with its documented dimensions when the stack starts watching it.
 */
const FUNCTION = [['FunctionName'], ['FunctionName', 'Resource']];
const documented = (namespace: string, names: string, sets: readonly string[][]) =>
  Object.fromEntries(names.split(' ').map((name) => [`${namespace} ${name}`, sets]));
const AWS_METRIC_DIMENSIONS: Record<string, readonly string[][]> = {
  ...documented(
    'AWS/Lambda',
    'Errors Throttles Invocations Duration IteratorAge DestinationDeliveryFailures DeadLetterErrors',
    FUNCTION,
  ),
  ...documented('AWS/Lambda', 'ConcurrentExecutions', [[], ...FUNCTION]),
  ...documented('AWS/ApiGateway', '4xx 5xx Count Latency IntegrationLatency', [
    ['ApiId'],
    ['ApiId', 'Stage'],
    ['ApiId', 'Stage', 'Route'],
  ]),
  ...documented(
    'AWS/DynamoDB',
    'ReadThrottleEvents WriteThrottleEvents ConsumedReadCapacityUnits ConsumedWriteCapacityUnits',
    [['TableName'], ['GlobalSecondaryIndexName', 'TableName']],
  ),
  ...documented('AWS/DynamoDB', 'ThrottledRequests SystemErrors SuccessfulRequestLatency', [
    ['Operation', 'TableName'],
  ]),
  ...documented('AWS/DynamoDB', 'UserErrors', [[]]),
  ...documented(
    'AWS/SQS',
    'ApproximateNumberOfMessagesVisible ApproximateAgeOfOldestMessage ApproximateNumberOfMessagesNotVisible NumberOfMessagesSent NumberOfMessagesReceived',
    [['QueueName']],
  ),
};

interface Watched {
  namespace: string;
  name: string;
  /** Dimension name → the logical id it names (or its literal value). */
  dimensions: Record<string, string>;
}

const metricsOf = (alarm: CfnAlarm): Watched[] => {
  const one = (metric: Json): Watched => ({
    namespace: String(metric.namespace),
    name: String(metric.metricName),
    dimensions: Object.fromEntries(
      asList<Json>(metric.dimensions).map((d) => [String(d.name), targetOf(alarm, d.value) ?? String(d.value)]),
    ),
  });
  if (alarm.metricName)
    return [
      one(read(alarm, { namespace: alarm.namespace, metricName: alarm.metricName, dimensions: alarm.dimensions })),
    ];
  return asList<Json>(read(alarm, alarm.metrics))
    .filter((query) => query.metricStat)
    .map((query) => one(query.metricStat.metric));
};

const show = ({ namespace, name, dimensions }: Watched) =>
  `${namespace}/${name} {${Object.entries(dimensions)
    .map(([key, value]) => `${key}=${value}`)
    .join(', ')}}`;

const sameSet = (a: readonly string[], b: readonly string[]) => [...a].sort().join() === [...b].sort().join();

/** The resource type each dimension names. */
const DIMENSION_TYPES: Record<string, string> = {
  FunctionName: 'AWS::Lambda::Function',
  TableName: 'AWS::DynamoDB::Table',
  QueueName: 'AWS::SQS::Queue',
  ApiId: 'AWS::ApiGatewayV2::Api',
};

/** What must be watched on a resource: [namespace, metric, dimension, what it is]. */
const requiredWatches = (node: CfnResource): [string, string, string, string][] => {
  const id = idOf(node);
  const mappings = resourcesOf(node, CfnEventSourceMapping);
  if (node instanceof CfnFunction) {
    const consumer = mappings.some((mapping) => targetOf(mapping, mapping.functionName) === id);
    return [
      ...['Errors', 'Throttles', 'Duration'].map((name): [string, string, string, string] => [
        'AWS/Lambda',
        name,
        'FunctionName',
        `function ${id}`,
      ]),
      ...(consumer
        ? [['AWS/Lambda', 'IteratorAge', 'FunctionName', `stream consumer ${id}`] as [string, string, string, string]]
        : []),
    ];
  }
  if (node instanceof CfnQueue) {
    const destination = mappings.some(
      (mapping) => targetOf(mapping, read(mapping, mapping.destinationConfig)?.onFailure?.destination) === id,
    );
    return destination
      ? [['AWS/SQS', 'ApproximateNumberOfMessagesVisible', 'QueueName', `failure destination ${id}`]]
      : [];
  }
  if (node instanceof CfnApi) {
    return [
      ...['5xx', '4xx', 'Latency'].map((name): [string, string, string, string] => [
        'AWS/ApiGateway',
        name,
        'ApiId',
        `API ${id}`,
      ]),
      ...ALARMED_CUSTOM_METRICS.map((name): [string, string, string, string] => [
        METRICS_NAMESPACE,
        name,
        '',
        'the service',
      ]),
    ];
  }
  return [['AWS/DynamoDB', 'ReadThrottleEvents', 'TableName', `table ${id}`]];
};

/** A table's throttle metrics don't count its indexes': where a table's are watched, so must each index's be. */
const unwatchedIndexes = (table: CfnTable, watched: Watched[]): string[] => {
  const id = idOf(table);
  const indexes = asList<Json>(read(table, table.globalSecondaryIndexes)).map((index) => String(index.indexName));
  const ofTable = (metric: Watched) => metric.namespace === 'AWS/DynamoDB' && metric.dimensions.TableName === id;
  return [
    ...new Set(
      watched
        .filter((m) => ofTable(m) && /ThrottleEvents$/.test(m.name) && !m.dimensions.GlobalSecondaryIndexName)
        .map((m) => m.name),
    ),
  ].flatMap((name) =>
    indexes
      .filter(
        (index) =>
          !watched.some((m) => ofTable(m) && m.name === name && m.dimensions.GlobalSecondaryIndexName === index),
      )
      .map(
        (index) =>
          `${name} of table ${id} is watched, which does not count index ${index}, and no alarm watches the index's`,
      ),
  );
};

const GREATER = new Set(['GreaterThanThreshold', 'GreaterThanOrEqualToThreshold']);

/** Why an alarm can never fire, or undefined. */
const neverFires = (alarm: CfnAlarm): string | undefined => {
  const threshold = Number(read(alarm, alarm.threshold));
  const periods = Number(read(alarm, alarm.evaluationPeriods));
  const datapoints = read(alarm, alarm.datapointsToAlarm);
  if (!Number.isFinite(threshold)) return 'has no threshold';
  if (!(periods >= 1)) return `evaluation periods ${periods}`;
  if (datapoints !== undefined && !(datapoints >= 1 && datapoints <= periods))
    return `needs ${datapoints} breaching datapoints out of ${periods}`;
  if (!GREATER.has(String(alarm.comparisonOperator)))
    return threshold <= 0 ? `${alarm.comparisonOperator} ${threshold} on a metric that is never negative` : undefined;
  const expression = asList<Json>(read(alarm, alarm.metrics))
    .map((query) => String(query.expression ?? ''))
    .join(' ');
  if (/\b100 \*/.test(expression) && threshold >= 100) return `a percentage above ${threshold}`;
  const metrics = metricsOf(alarm);
  const duration = metrics.length === 1 && metrics[0]!.namespace === 'AWS/Lambda' && metrics[0]!.name === 'Duration';
  const fn = duration ? resourceOf(alarm, metrics[0]!.dimensions.FunctionName, CfnFunction) : undefined;
  const timeoutMs = fn ? (read(fn, fn.timeout) ?? 3) * 1000 : Infinity;
  return threshold >= timeoutMs
    ? `Duration above ${threshold} ms, but the function stops at its ${timeoutMs} ms timeout`
    : undefined;
};

const actionsOf = (alarm: CfnAlarm, which: 'alarmActions' | 'okActions') =>
  asList(read(alarm, alarm[which])).map((action) => JSON.stringify(action));

export const alarmRules = [
  rule(
    CfnAlarm,
    'alarm-target',
    'each alarm watches a function, table (and index), queue or API of this stack',
    (alarm) =>
      metricsOf(alarm).flatMap((metric) => [
        ...Object.entries(metric.dimensions)
          .filter(([name, value]) => DIMENSION_TYPES[name] && typeOf(alarm, value) !== DIMENSION_TYPES[name])
          .map(([name, value]) => `watches ${metric.name} of ${name} ${value}, not a resource of the stack`),
        ...(metric.dimensions.GlobalSecondaryIndexName === undefined ||
        asList<Json>(
          read(alarm, resourceOf(alarm, metric.dimensions.TableName, CfnTable)?.globalSecondaryIndexes),
        ).some((index) => index.indexName === metric.dimensions.GlobalSecondaryIndexName)
          ? []
          : [
              `watches index ${metric.dimensions.GlobalSecondaryIndexName}, which table ${metric.dimensions.TableName} does not have`,
            ]),
      ]),
  ),
  rule(CfnAlarm, 'alarm-dimensions', 'each AWS metric watched with dimensions AWS publishes it with', (alarm) =>
    metricsOf(alarm)
      .filter((metric) => metric.namespace.startsWith('AWS/'))
      .flatMap((metric) => {
        const documented = AWS_METRIC_DIMENSIONS[`${metric.namespace} ${metric.name}`];
        if (!documented) return [`watches ${show(metric)}, an AWS metric this rule does not know`];
        return documented.some((set) => sameSet(set, Object.keys(metric.dimensions)))
          ? []
          : [
              `watches ${show(metric)}: AWS publishes it with dimensions ${documented.map((set) => `{${set.join(', ')}}`).join(' or ')}`,
            ];
      }),
  ),
  rule<CfnFunction | CfnQueue | CfnApi | CfnTable>(
    [CfnFunction, CfnQueue, CfnApi, CfnTable],
    'alarm-coverage',
    'every function (errors, throttles, duration), stream (iterator age), failure queue (depth), table and index (throttles), the API (5xx, 4xx incl. 429, latency) and every loss metric has an alarm',
    (node) => {
      const watched = resourcesOf(node, CfnAlarm).flatMap(metricsOf);
      const id = idOf(node);
      return [
        ...requiredWatches(node)
          .filter(
            ([namespace, name, dimension]) =>
              !watched.some(
                (m) =>
                  m.namespace === namespace && m.name === name && (dimension === '' || m.dimensions[dimension] === id),
              ),
          )
          .map(([namespace, name, , what]) => `no alarm watches ${namespace} ${name} of ${what}`),
        ...(node instanceof CfnTable ? unwatchedIndexes(node, watched) : []),
      ];
    },
  ),
  rule(
    CfnAlarm,
    'alarm-threshold',
    'a threshold the metric can cross (not a percentage over 100, a duration past the timeout, a count below 0)',
    (alarm) => {
      const reason = neverFires(alarm);
      return reason && `can never fire: ${reason}`;
    },
  ),
  rule(
    CfnAlarm,
    'alarm-missing-data',
    'missing data is not breaching (no traffic is not a failure; docs/deploy.md "Alarms")',
    (alarm) =>
      alarm.treatMissingData === 'notBreaching'
        ? undefined
        : `treats missing data as ${alarm.treatMissingData ?? 'missing (the default)'}, expected notBreaching`,
  ),
  rule(
    CfnAlarm,
    'alarm-actions',
    'when the deployer gave a topic (the stack says so in its metadata), every alarm notifies it on alarm and on recovery',
    (alarm) => {
      if (read(alarm, alarm.actionsEnabled) === false) return 'its actions are disabled';
      const alarms = resourcesOf(alarm, CfnAlarm);
      const topics = new Set(
        alarms.flatMap((other) => [...actionsOf(other, 'alarmActions'), ...actionsOf(other, 'okActions')]),
      );
      if (intentOf(alarm).alarmTopic === true && topics.size === 0)
        return 'notifies nobody, though the deployer gave an alarm topic';
      const missing = [...topics].filter(
        (topic) => !actionsOf(alarm, 'alarmActions').includes(topic) || !actionsOf(alarm, 'okActions').includes(topic),
      );
      return missing.length ? `does not notify ${missing.join(', ')}, which the other alarms notify` : undefined;
    },
  ),
];
