/**
 * Alarms as deployed: each on a resource of the stack, every function, stream, queue, table and
 * the API covered, thresholds that can be crossed, missing data treated as designed (no traffic is
 * not a failure), and every alarm notifying the deployer's topic when there is one.
 */
import {
  METRICS_NAMESPACE,
  RATE_LIMIT_COUNTER_FAILED_METRIC,
  USAGE_WRITE_FAILED_METRIC,
} from '../../../shared/domain/telemetry';
import { ROLLUP_UNREADABLE_METRIC } from '../../../shared/lambda/usage-stream';
import type { Json } from '../assembly';
import { asList, defect, resourcesOf, targetOf, type CheckContext, type TemplateCheck } from './table';

/** Custom metrics that mean something was lost or let through: each must have an alarm. */
export const ALARMED_CUSTOM_METRICS = [
  USAGE_WRITE_FAILED_METRIC,
  RATE_LIMIT_COUNTER_FAILED_METRIC,
  ROLLUP_UNREADABLE_METRIC,
];

interface WatchedMetric {
  namespace: string;
  name: string;
  /** Dimension name → the logical id (or literal) it names. */
  dimensions: Record<string, string>;
}

const metricOf = (metric: Json): WatchedMetric => ({
  namespace: String(metric.Namespace),
  name: String(metric.MetricName),
  dimensions: Object.fromEntries(
    asList<Json>(metric.Dimensions).map((d) => [String(d.Name), targetOf(d.Value) ?? String(d.Value)]),
  ),
});

const alarmsOf = (context: CheckContext) =>
  resourcesOf(context.assembly, 'AWS::CloudWatch::Alarm').map(([id, props]) => ({
    id,
    props,
    metrics: props.MetricName
      ? [metricOf(props)]
      : asList<Json>(props.Metrics)
          .filter((q) => q.MetricStat)
          .map((q) => metricOf(q.MetricStat.Metric)),
    expression: asList<Json>(props.Metrics)
      .map((q) => String(q.Expression ?? ''))
      .join(' '),
  }));

/** The resource type each dimension names. */
const DIMENSION_TYPES: Record<string, string> = {
  FunctionName: 'AWS::Lambda::Function',
  TableName: 'AWS::DynamoDB::Table',
  QueueName: 'AWS::SQS::Queue',
  ApiId: 'AWS::ApiGatewayV2::Api',
};

const alarmTarget: TemplateCheck = {
  name: 'alarm-target',
  description: 'each alarm watches a function, table, queue or API of this stack',
  run: (context) =>
    alarmsOf(context).flatMap(({ id, metrics }) =>
      metrics.flatMap((metric) =>
        Object.entries(metric.dimensions)
          .filter(
            ([name, value]) =>
              DIMENSION_TYPES[name] && context.assembly.resources[value]?.Type !== DIMENSION_TYPES[name],
          )
          .map(([name, value]) =>
            defect(id, `watches ${metric.name} of ${name} ${value}, not a resource of the stack`),
          ),
      ),
    ),
};

/** What must be watched: [namespace, metric, dimension, logical id, what it is]. */
const requiredWatches = (context: CheckContext): [string, string, string, string, string][] => {
  const { assembly } = context;
  const required: [string, string, string, string, string][] = [];
  for (const [fn] of resourcesOf(assembly, 'AWS::Lambda::Function')) {
    for (const name of ['Errors', 'Throttles', 'Duration'])
      required.push(['AWS/Lambda', name, 'FunctionName', fn, `function ${fn}`]);
  }
  for (const [, mapping] of resourcesOf(assembly, 'AWS::Lambda::EventSourceMapping')) {
    const fn = targetOf(mapping.FunctionName);
    if (fn) required.push(['AWS/Lambda', 'IteratorAge', 'FunctionName', fn, `stream consumer ${fn}`]);
    const queue = targetOf(mapping.DestinationConfig?.OnFailure?.Destination);
    if (queue && assembly.resources[queue]?.Type === 'AWS::SQS::Queue') {
      required.push([
        'AWS/SQS',
        'ApproximateNumberOfMessagesVisible',
        'QueueName',
        queue,
        `failure destination ${queue}`,
      ]);
    }
  }
  for (const [api] of resourcesOf(assembly, 'AWS::ApiGatewayV2::Api')) {
    for (const name of ['5xx', '4xx', 'Latency']) required.push(['AWS/ApiGateway', name, 'ApiId', api, `API ${api}`]);
  }
  for (const [table] of resourcesOf(assembly, 'AWS::DynamoDB::Table'))
    required.push(['AWS/DynamoDB', 'ReadThrottleEvents', 'TableName', table, `table ${table}`]);
  for (const name of ALARMED_CUSTOM_METRICS) required.push([METRICS_NAMESPACE, name, 'service', '', 'the service']);
  return required;
};

const alarmCoverage: TemplateCheck = {
  name: 'alarm-coverage',
  description:
    'every function (errors, throttles, duration), stream (iterator age), failure queue (depth), table (throttles), the API (5xx, 4xx incl. 429, latency) and every loss metric has an alarm',
  run: (context) => {
    const watched = alarmsOf(context).flatMap((alarm) => alarm.metrics);
    return requiredWatches(context)
      .filter(
        ([namespace, name, dimension, id]) =>
          !watched.some(
            (m) => m.namespace === namespace && m.name === name && (id === '' || m.dimensions[dimension] === id),
          ),
      )
      .map(([namespace, name, , id, what]) =>
        defect(id || context.assembly.stack, `no alarm watches ${namespace} ${name} of ${what}`),
      );
  },
};

const GREATER = new Set(['GreaterThanThreshold', 'GreaterThanOrEqualToThreshold']);

/** Why an alarm can never fire, or undefined. */
const neverFires = (context: CheckContext, alarm: ReturnType<typeof alarmsOf>[number]): string | undefined => {
  const { props, metrics, expression } = alarm;
  const threshold = Number(props.Threshold);
  const periods = Number(props.EvaluationPeriods);
  if (!Number.isFinite(threshold)) return 'has no threshold';
  if (!(periods >= 1)) return `evaluation periods ${props.EvaluationPeriods}`;
  if (props.DatapointsToAlarm !== undefined && !(props.DatapointsToAlarm >= 1 && props.DatapointsToAlarm <= periods)) {
    return `needs ${props.DatapointsToAlarm} breaching datapoints out of ${periods}`;
  }
  if (!GREATER.has(props.ComparisonOperator))
    return threshold <= 0 ? `${props.ComparisonOperator} ${threshold} on a metric that is never negative` : undefined;
  if (/\b100 \*/.test(expression) && threshold >= 100) return `a percentage above ${threshold}`;
  const duration = metrics.find((m) => m.namespace === 'AWS/Lambda' && m.name === 'Duration' && metrics.length === 1);
  const fn = duration ? context.assembly.resources[duration.dimensions.FunctionName ?? ''] : undefined;
  const timeoutMs = Number(fn?.Properties?.Timeout ?? 3) * 1000;
  if (fn && threshold >= timeoutMs)
    return `Duration above ${threshold} ms, but the function stops at its ${timeoutMs} ms timeout`;
  return undefined;
};

const alarmCrossable: TemplateCheck = {
  name: 'alarm-threshold',
  description:
    'a threshold the metric can cross (not a percentage over 100, a duration past the timeout, a count below 0)',
  run: (context) =>
    alarmsOf(context).flatMap((alarm) => {
      const reason = neverFires(context, alarm);
      return reason ? [defect(alarm.id, `can never fire: ${reason}`)] : [];
    }),
};

const alarmMissingData: TemplateCheck = {
  name: 'alarm-missing-data',
  description: 'missing data is not breaching (no traffic is not a failure; docs/deploy.md "Alarms")',
  run: (context) =>
    alarmsOf(context)
      .filter(({ props }) => props.TreatMissingData !== 'notBreaching')
      .map(({ id, props }) =>
        defect(
          id,
          `treats missing data as ${props.TreatMissingData ?? 'missing (the default)'}, expected notBreaching`,
        ),
      ),
};

const alarmActions: TemplateCheck = {
  name: 'alarm-actions',
  description:
    'when the deployer gave a topic (the stack says so in its metadata), every alarm notifies it on alarm and on recovery',
  run: (context) => {
    const alarms = alarmsOf(context);
    const key = (value: unknown) => JSON.stringify(value);
    const topics = new Set(
      alarms.flatMap(({ props }) => [...asList(props.AlarmActions), ...asList(props.OKActions)].map(key)),
    );
    const given = context.assembly.metadata.BranchApi?.alarmTopic === true;
    return alarms.flatMap(({ id, props }) => {
      if (props.ActionsEnabled === false) return [defect(id, 'its actions are disabled')];
      if (given && topics.size === 0) return [defect(id, 'notifies nobody, though the deployer gave an alarm topic')];
      const missing = [...topics].filter(
        (topic) =>
          !asList(props.AlarmActions).map(key).includes(topic) || !asList(props.OKActions).map(key).includes(topic),
      );
      return missing.length ? [defect(id, `does not notify ${missing.join(', ')}, which the other alarms notify`)] : [];
    });
  },
};

export const alarmChecks: readonly TemplateCheck[] = [
  alarmTarget,
  alarmCoverage,
  alarmCrossable,
  alarmMissingData,
  alarmActions,
];
