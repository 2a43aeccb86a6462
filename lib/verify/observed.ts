/**
 * What the run saw, judged against the template: each function's DynamoDB calls against its role
 * (IAM's semantics, lib/infra/nag/iam.ts), each grant against the calls (least privilege both
 * ways), and each alarm on a custom metric against the metrics the run emitted. What a template
 * shows alone (stream reads, failure destinations, key events grants) is the nag rules'.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Assembly, TemplateAlarm } from './assembly';
import type { EmittedMetric } from './function-host';
import { actionMatches, evaluate, resourceMatches, type Statement } from '../infra/nag/iam';
import { asList } from '../infra/nag/rule';
import { arnOf, type DynamoOperation } from './recording-proxy';

export interface Defect {
  /** Logical id of the resource at fault. */
  resource: string;
  reason: string;
  /** The check (or the stack's nag rule) that found it. */
  check?: string;
}

export interface IamUse {
  functionLogicalId: string;
  roleLogicalId?: string;
  operations: DynamoOperation[];
  /** Stream ARNs its event source mappings read (their reads are the mapping's, with the function's role). */
  streams: string[];
}

/** Stream reads are made by the event source mapping with the function's role, not by its code. */
const STREAM_ACTIONS = ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator'];
/** No resource-level permission: granted on `*`, used when the mapping reads a stream. */
const LIST_STREAMS = 'dynamodb:ListStreams';

/** A local table ARN by its table (and index): `TablesKeys…/index/by-branch`. */
const named = (arn: string) => arn.replace(/^.*:table\/verify-/, '');

const describe = (operation: DynamoOperation) =>
  `${operation.action} on table ${operation.table}${operation.index ? ` index ${operation.index}` : ''}`;

/** Every Allow of a DynamoDB action the run never used, on each resource of the stack it covers. */
const unusedGrants = (assembly: Assembly, use: IamUse, statements: readonly Statement[]): Defect[] => {
  const tableArns = assembly.tables.flatMap((table) => [
    table.arn,
    ...table.indexes.map((index) => `${table.arn}/index/${index}`),
  ]);
  const streamArns = assembly.tables.flatMap((table) => table.streamArn ?? []);
  const used = (pattern: string, arn: string) =>
    use.operations.some((op) => actionMatches(pattern, op.action) && arnOf(op) === arn) ||
    (STREAM_ACTIONS.some((action) => actionMatches(pattern, action)) && use.streams.includes(arn));
  return statements
    .filter((statement) => statement.Effect === 'Allow')
    .flatMap((statement): Defect[] => {
      const unused = (reason: string): Defect[] => [
        {
          check: 'iam',
          resource: statement.source?.split(' ')[0] ?? use.functionLogicalId,
          reason: `${reason} (function ${use.functionLogicalId})`,
        },
      ];
      if (statement.NotAction !== undefined || statement.NotResource !== undefined)
        return unused(
          `${statement.source} allows by exclusion (NotAction/NotResource): more than any run can show it uses`,
        );
      return asList(statement.Action)
        .filter((action) => action.toLowerCase().startsWith('dynamodb:'))
        .flatMap((action) => {
          if (/[*?]/.test(action)) return unused(`${action} is granted by wildcard: more than the calls the run made`);
          if (action === LIST_STREAMS)
            return use.streams.length ? [] : unused(`${action} is granted but the run never used it`);
          const candidates = STREAM_ACTIONS.includes(action) ? streamArns : tableArns;
          return asList(statement.Resource).flatMap((resource) => {
            const covered = /[*?]/.test(resource) ? candidates.filter((arn) => resourceMatches(resource, arn)) : [];
            if (covered.length === 0)
              return used(action, resource)
                ? []
                : unused(`${action} on ${resource} is granted but the run never used it`);
            const never = covered.filter((arn) => !used(action, arn)).map(named);
            return never.length
              ? unused(`${action} on ${resource} is granted on ${never.join(', ')}, which the run never used it on`)
              : [];
          });
        });
    });
};

/**
 * Each call against its function's role, and each of the role's DynamoDB grants against the calls
 * (a stream consumer's stream reads count as used when its mapping reads one).
 */
export const checkIam = (assembly: Assembly, uses: readonly IamUse[]): Defect[] => {
  const tables = new Set(assembly.tables.map((table) => table.name));
  const defects: Defect[] = [];
  for (const use of uses) {
    const statements = use.roleLogicalId ? (assembly.statements.get(use.roleLogicalId) ?? []) : [];
    for (const op of new Map(use.operations.map((one) => [describe(one), one])).values()) {
      const reason = !tables.has(op.table)
        ? 'a table the template does not define'
        : evaluate(statements, op.action, arnOf(op)).reason;
      if (reason)
        defects.push({
          check: 'iam',
          resource: use.functionLogicalId,
          reason: `calls ${describe(op)}, ${tables.has(op.table) ? `which its role does not allow: ${reason}` : reason}`,
        });
    }
    defects.push(...unusedGrants(assembly, use, statements));
  }
  return defects;
};

const show = (metric: { namespace: string; name: string; dimensions: Record<string, string | undefined> }) =>
  `${metric.namespace}/${metric.name} {${Object.entries(metric.dimensions)
    .map(([name, value]) => `${name}=${value ?? '?'}`)
    .join(', ')}}`;

/** Each alarm on a custom metric watches one the run emitted (namespace, name, dimensions); AWS metrics are the nag rules'. */
export const checkAlarms = (alarms: readonly TemplateAlarm[], emitted: readonly EmittedMetric[]): Defect[] =>
  alarms.flatMap((alarm) =>
    alarm.metrics
      .filter((metric) => !metric.namespace.startsWith('AWS/'))
      // The same namespace, name and dimensions (each of them, with its value).
      .filter((metric) => !emitted.some((candidate) => isDeepStrictEqual(candidate, metric)))
      .map((metric) => {
        const near = [...new Set(emitted.filter((candidate) => candidate.name === metric.name).map(show))];
        return {
          check: 'alarm-metrics',
          resource: alarm.logicalId,
          reason: `watches ${show(metric)}, which the run never emitted${near.length ? ` (emitted: ${near.join('; ')})` : ''}`,
        };
      }),
  );
