/**
 * What the run is checked against: each function's IAM statements against the DynamoDB calls it
 * made, and each alarm against the metrics the run emitted (custom namespaces) or the dimensions
 * AWS documents (AWS namespaces).
 */
import type { Assembly, Statement, TemplateAlarm } from './assembly';
import type { EmittedMetric } from './function-host';
import { arnOf, type DynamoOperation } from './recording-proxy';

export interface Defect {
  /** Logical id of the resource at fault. */
  resource: string;
  reason: string;
  /** The offline check that found it (lib/verify/checks/), when one did. */
  check?: string;
}

const pattern = (glob: string, flags = ''): RegExp =>
  new RegExp(`^${glob.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`, flags);

const actionMatches = (granted: string, action: string) => pattern(granted, 'i').test(action);
const resourceMatches = (granted: string, arn: string) => pattern(granted).test(arn);

/** Whether the statements allow `action` on the resource `arn` (wildcards as IAM reads them). */
export const allows = (statements: readonly Statement[], action: string, arn: string) =>
  statements.some(
    (statement) =>
      statement.actions.some((granted) => actionMatches(granted, action)) &&
      statement.resources.some((granted) => resourceMatches(granted, arn)),
  );

const describe = (operation: DynamoOperation) =>
  `${operation.action} on table ${operation.table}${operation.index ? ` index ${operation.index}` : ''}`;

/** Stream reads are made by the event source mapping with the function's role, not by its code. */
const STREAM_ACTIONS = [
  'dynamodb:DescribeStream',
  'dynamodb:GetRecords',
  'dynamodb:GetShardIterator',
  'dynamodb:ListStreams',
];

export interface IamUse {
  functionLogicalId: string;
  roleLogicalId?: string;
  operations: DynamoOperation[];
  /** Stream ARNs its event source mappings read. */
  streams: string[];
  /** On-failure destinations of its event source mappings, which Lambda sends to with the function's role. */
  destinations?: string[];
}

/** What Lambda needs the execution role to allow to send a failed batch to a destination. */
const DESTINATION_ACTIONS: Record<string, string> = { sqs: 'sqs:SendMessage', sns: 'sns:Publish' };

export const checkIam = (assembly: Assembly, uses: readonly IamUse[]): { defects: Defect[]; unused: string[] } => {
  const defects: Defect[] = [];
  const unused: string[] = [];
  const tableNames = new Set(assembly.tables.map((table) => table.name));
  for (const use of uses) {
    const statements = use.roleLogicalId ? (assembly.statements.get(use.roleLogicalId) ?? []) : [];
    const seen = new Set<string>();
    for (const operation of use.operations) {
      const key = describe(operation);
      if (seen.has(key)) continue;
      seen.add(key);
      if (!tableNames.has(operation.table)) {
        defects.push({ resource: use.functionLogicalId, reason: `calls ${key}, a table the template does not define` });
      } else if (!allows(statements, operation.action, arnOf(operation))) {
        defects.push({ resource: use.functionLogicalId, reason: `calls ${key}, which its role does not allow` });
      }
    }
    for (const stream of use.streams) {
      for (const action of STREAM_ACTIONS.filter((name) => name !== 'dynamodb:ListStreams')) {
        if (!allows(statements, action, stream)) {
          defects.push({
            resource: use.functionLogicalId,
            reason: `its event source mapping reads stream ${stream}, but its role does not allow ${action} on it`,
          });
        }
      }
    }
    for (const destination of use.destinations ?? []) {
      const action = DESTINATION_ACTIONS[destination.split(':')[2] ?? ''];
      if (!action) {
        defects.push({
          resource: use.functionLogicalId,
          reason: `its event source mapping sends failed batches to ${destination}, a destination this check does not know`,
        });
      } else if (!allows(statements, action, destination)) {
        defects.push({
          resource: use.functionLogicalId,
          reason: `its event source mapping sends failed batches to ${destination}, but its role does not allow ${action} on it`,
        });
      }
    }
    for (const statement of statements) {
      for (const action of statement.actions.filter((granted) => granted.toLowerCase().startsWith('dynamodb:'))) {
        for (const resource of statement.resources) {
          const used =
            use.operations.some((op) => actionMatches(action, op.action) && resourceMatches(resource, arnOf(op))) ||
            (STREAM_ACTIONS.some((stream) => actionMatches(action, stream)) &&
              use.streams.some((arn) => resourceMatches(resource, arn)));
          if (!used) {
            const line = `${action} on ${resource} is granted but the run never used it`;
            unused.push(`${use.functionLogicalId}: ${line}`);
            defects.push({ resource: statement.source, reason: `${line} (function ${use.functionLogicalId})` });
          }
        }
      }
    }
  }
  return { defects, unused };
};

/**
 * Dimension sets AWS documents for the AWS metrics alarms here may watch (CloudWatch metrics
 * pages of Lambda, API Gateway HTTP APIs, DynamoDB and SQS). A metric not listed is a defect:
 * add it with its documented dimensions when the stack starts watching it.
 */
export const AWS_METRIC_DIMENSIONS: Record<string, readonly string[][]> = {
  'AWS/Lambda Errors': [['FunctionName'], ['FunctionName', 'Resource']],
  'AWS/Lambda Throttles': [['FunctionName'], ['FunctionName', 'Resource']],
  'AWS/Lambda Invocations': [['FunctionName'], ['FunctionName', 'Resource']],
  'AWS/Lambda Duration': [['FunctionName'], ['FunctionName', 'Resource']],
  'AWS/Lambda IteratorAge': [['FunctionName'], ['FunctionName', 'Resource']],
  'AWS/Lambda ConcurrentExecutions': [[], ['FunctionName'], ['FunctionName', 'Resource']],
  'AWS/Lambda DestinationDeliveryFailures': [['FunctionName'], ['FunctionName', 'Resource']],
  'AWS/Lambda DeadLetterErrors': [['FunctionName'], ['FunctionName', 'Resource']],
  'AWS/ApiGateway 4xx': [['ApiId'], ['ApiId', 'Stage'], ['ApiId', 'Stage', 'Route']],
  'AWS/ApiGateway 5xx': [['ApiId'], ['ApiId', 'Stage'], ['ApiId', 'Stage', 'Route']],
  'AWS/ApiGateway Count': [['ApiId'], ['ApiId', 'Stage'], ['ApiId', 'Stage', 'Route']],
  'AWS/ApiGateway Latency': [['ApiId'], ['ApiId', 'Stage'], ['ApiId', 'Stage', 'Route']],
  'AWS/ApiGateway IntegrationLatency': [['ApiId'], ['ApiId', 'Stage'], ['ApiId', 'Stage', 'Route']],
  'AWS/DynamoDB ReadThrottleEvents': [['TableName'], ['GlobalSecondaryIndexName', 'TableName']],
  'AWS/DynamoDB WriteThrottleEvents': [['TableName'], ['GlobalSecondaryIndexName', 'TableName']],
  'AWS/DynamoDB ThrottledRequests': [['Operation', 'TableName']],
  'AWS/DynamoDB SystemErrors': [['Operation', 'TableName']],
  'AWS/DynamoDB SuccessfulRequestLatency': [['Operation', 'TableName']],
  'AWS/DynamoDB UserErrors': [[]],
  'AWS/DynamoDB ConsumedReadCapacityUnits': [['TableName'], ['GlobalSecondaryIndexName', 'TableName']],
  'AWS/DynamoDB ConsumedWriteCapacityUnits': [['TableName'], ['GlobalSecondaryIndexName', 'TableName']],
  'AWS/SQS ApproximateNumberOfMessagesVisible': [['QueueName']],
  'AWS/SQS ApproximateAgeOfOldestMessage': [['QueueName']],
  'AWS/SQS ApproximateNumberOfMessagesNotVisible': [['QueueName']],
  'AWS/SQS NumberOfMessagesSent': [['QueueName']],
  'AWS/SQS NumberOfMessagesReceived': [['QueueName']],
};

const sameSet = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && [...a].sort().every((name, i) => name === [...b].sort()[i]);

const show = (metric: { namespace: string; name: string; dimensions: Record<string, string | undefined> }) =>
  `${metric.namespace}/${metric.name} {${Object.entries(metric.dimensions)
    .map(([name, value]) => `${name}=${value ?? '?'}`)
    .join(', ')}}`;

export const checkAlarms = (
  assembly: Assembly,
  alarms: readonly TemplateAlarm[],
  emitted: readonly EmittedMetric[],
) => {
  const defects: Defect[] = [];
  const functionIds = new Set(assembly.functions.map((fn) => fn.logicalId));
  const tables = new Map(assembly.tables.map((table) => [table.name, table]));
  for (const alarm of alarms) {
    for (const metric of alarm.metrics) {
      if (!metric.namespace.startsWith('AWS/')) {
        const seen = emitted.some(
          (candidate) =>
            candidate.namespace === metric.namespace &&
            candidate.name === metric.name &&
            sameSet(Object.keys(candidate.dimensions), Object.keys(metric.dimensions)) &&
            Object.entries(metric.dimensions).every(([name, value]) => candidate.dimensions[name] === value),
        );
        if (!seen) {
          const near = emitted.filter((candidate) => candidate.name === metric.name).map(show);
          defects.push({
            resource: alarm.logicalId,
            reason: `watches ${show(metric)}, which the run never emitted${near.length ? ` (emitted: ${[...new Set(near)].join('; ')})` : ''}`,
          });
        }
        continue;
      }
      const documented = AWS_METRIC_DIMENSIONS[`${metric.namespace} ${metric.name}`];
      const names = Object.keys(metric.dimensions);
      if (!documented) {
        defects.push({
          resource: alarm.logicalId,
          reason: `watches ${show(metric)}, an AWS metric this check does not know`,
        });
      } else if (!documented.some((set) => sameSet(set, names))) {
        defects.push({
          resource: alarm.logicalId,
          reason: `watches ${show(metric)}: AWS publishes it with dimensions ${documented.map((set) => `{${set.join(', ')}}`).join(' or ')}`,
        });
      }
      const { FunctionName, TableName, GlobalSecondaryIndexName } = metric.dimensions;
      if (FunctionName !== undefined && !functionIds.has(FunctionName)) {
        defects.push({
          resource: alarm.logicalId,
          reason: `watches function ${FunctionName}, not a function of the stack`,
        });
      }
      if (TableName !== undefined) {
        const table = tables.get(TableName);
        if (!table)
          defects.push({ resource: alarm.logicalId, reason: `watches table ${TableName}, not a table of the stack` });
        else if (GlobalSecondaryIndexName !== undefined && !table.indexes.includes(GlobalSecondaryIndexName)) {
          defects.push({
            resource: alarm.logicalId,
            reason: `watches index ${GlobalSecondaryIndexName}, which table ${table.logicalId} does not have`,
          });
        }
      }
    }
  }
  defects.push(...checkIndexThrottleCoverage(assembly, alarms));
  return defects;
};

const THROTTLE_METRICS = ['ReadThrottleEvents', 'WriteThrottleEvents'];

/**
 * A table's ReadThrottleEvents/WriteThrottleEvents do not count its global secondary indexes'
 * throttling: where a table's throttling is watched, each of its indexes must be watched too.
 */
const checkIndexThrottleCoverage = (assembly: Assembly, alarms: readonly TemplateAlarm[]): Defect[] => {
  const defects: Defect[] = [];
  const watched = alarms.flatMap((alarm) =>
    alarm.metrics
      .filter((metric) => metric.namespace === 'AWS/DynamoDB' && THROTTLE_METRICS.includes(metric.name))
      .map((metric) => ({ alarm: alarm.logicalId, metric })),
  );
  for (const table of assembly.tables) {
    for (const { alarm, metric } of watched) {
      if (metric.dimensions.TableName !== table.name || metric.dimensions.GlobalSecondaryIndexName !== undefined)
        continue;
      for (const index of table.indexes) {
        const covered = watched.some(
          (other) =>
            other.metric.name === metric.name &&
            other.metric.dimensions.TableName === table.name &&
            other.metric.dimensions.GlobalSecondaryIndexName === index,
        );
        if (!covered) {
          defects.push({
            resource: alarm,
            reason: `watches ${metric.name} of table ${table.logicalId}, which does not count index ${index}, and no alarm watches the index's`,
          });
        }
      }
    }
  }
  return defects;
};
