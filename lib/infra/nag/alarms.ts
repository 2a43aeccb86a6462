/**
 * Alarms: each on a resource of the stack with dimensions AWS publishes the metric with; the lean
 * set of docs/deploy.md "Alarms" present (each failure cause watched once); thresholds that can be
 * crossed; missing data treated as designed (no traffic is not a failure); every alarm notifying
 * the deployer's topic when there is one.
 */
import { CfnApi, CfnIntegration } from 'aws-cdk-lib/aws-apigatewayv2';
import { CfnAlarm } from 'aws-cdk-lib/aws-cloudwatch';
import { CfnEventSourceMapping, CfnFunction } from 'aws-cdk-lib/aws-lambda';
import { CfnQueue } from 'aws-cdk-lib/aws-sqs';
import type { CfnResource } from 'aws-cdk-lib';
import { FAILURE_METRICS, METRICS_NAMESPACE } from '../../../shared/domain/telemetry';
import { asList, idOf, intentOf, read, resourcesOf, rule, targetOf, typeOf, type Json } from './rule';

/**
 * Dimension sets AWS documents for the AWS metrics alarms here may watch (CloudWatch metrics pages
 * of Lambda, API Gateway HTTP APIs and SQS). A metric not listed is a finding: add it with its
 * documented dimensions when the stack starts watching it.
 */
const FUNCTION = [['FunctionName'], ['FunctionName', 'Resource']];
const documented = (namespace: string, names: string, sets: readonly string[][]) =>
  Object.fromEntries(names.split(' ').map((name) => [`${namespace} ${name}`, sets]));
const AWS_METRIC_DIMENSIONS: Record<string, readonly string[][]> = {
  ...documented('AWS/Lambda', 'Errors Throttles Invocations Duration IteratorAge', FUNCTION),
  ...documented('AWS/ApiGateway', '4xx 5xx Count Latency IntegrationLatency', [
    ['ApiId'],
    ['ApiId', 'Stage'],
    ['ApiId', 'Stage', 'Route'],
  ]),
  ...documented('AWS/SQS', 'ApproximateNumberOfMessagesVisible ApproximateAgeOfOldestMessage', [['QueueName']]),
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
  QueueName: 'AWS::SQS::Queue',
  ApiId: 'AWS::ApiGatewayV2::Api',
};

type Watch = [namespace: string, metric: string, dimension: string, what: string];

/**
 * What must be watched on a resource, each failure cause once: the API's 5xx and latency (which
 * its endpoints' failures reach) and every failure metric; each stream consumer falling behind and
 * each failure destination's depth (lost); the errors of a function neither the API nor a stream sees.
 */
const requiredWatches = (node: CfnResource): Watch[] => {
  const id = idOf(node);
  const mappings = resourcesOf(node, CfnEventSourceMapping);
  if (node instanceof CfnApi) {
    return [
      ...['5xx', 'Latency'].map((name): Watch => ['AWS/ApiGateway', name, 'ApiId', `API ${id}`]),
      ...Object.keys(FAILURE_METRICS).map((name): Watch => [METRICS_NAMESPACE, name, '', 'the service']),
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
  if (mappings.some((mapping) => targetOf(mapping, mapping.functionName) === id)) {
    return [['AWS/Lambda', 'IteratorAge', 'FunctionName', `stream consumer ${id}`]];
  }
  const behindApi = resourcesOf(node, CfnIntegration).some((api) => targetOf(api, api.integrationUri) === id);
  return behindApi
    ? []
    : [['AWS/Lambda', 'Errors', 'FunctionName', `function ${id}, which neither the API nor a stream watches`]];
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
  return /\b100 \*/.test(expression) && threshold >= 100 ? `a percentage above ${threshold}` : undefined;
};

const actionsOf = (alarm: CfnAlarm, which: 'alarmActions' | 'okActions') =>
  asList(read(alarm, alarm[which])).map((action) => JSON.stringify(action));

export const alarmRules = [
  rule(CfnAlarm, 'alarm-target', 'each alarm watches a function, queue or API of this stack', (alarm) =>
    metricsOf(alarm).flatMap((metric) =>
      Object.entries(metric.dimensions)
        .filter(([name, value]) => DIMENSION_TYPES[name] && typeOf(alarm, value) !== DIMENSION_TYPES[name])
        .map(([name, value]) => `watches ${metric.name} of ${name} ${value}, not a resource of the stack`),
    ),
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
  rule<CfnFunction | CfnQueue | CfnApi>(
    [CfnFunction, CfnQueue, CfnApi],
    'alarm-coverage',
    'the lean set: the API (5xx, latency), every failure metric, every stream consumer (iterator age) and failure queue (depth), and the errors of a function neither the API nor a stream watches',
    (node) => {
      const watched = resourcesOf(node, CfnAlarm).flatMap(metricsOf);
      const id = idOf(node);
      return requiredWatches(node)
        .filter(
          ([namespace, name, dimension]) =>
            !watched.some(
              (m) =>
                m.namespace === namespace && m.name === name && (dimension === '' || m.dimensions[dimension] === id),
            ),
        )
        .map(([namespace, name, , what]) => `no alarm watches ${namespace} ${name} of ${what}`);
    },
  ),
  rule(
    CfnAlarm,
    'alarm-threshold',
    'a threshold the metric can cross (not a percentage over 100, a count below 0)',
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
