/**
 * What the run saw, judged against the template: each function's DynamoDB calls, stream reads and
 * failure destinations against its role (IAM's semantics, lib/verify/iam.ts), each grant against
 * the calls (least privilege both ways), the key events grants, and each alarm on a custom metric
 * against the metrics the run emitted.
 */
import { Resolver, type Assembly, type TemplateAlarm } from './assembly';
import type { EmittedMetric } from './function-host';
import { actionMatches, evaluate, resourceMatches, type Statement } from './iam';
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
  /** Stream ARNs its event source mappings read. */
  streams: string[];
  /** On-failure destinations of its event source mappings, which Lambda sends to with the function's role. */
  destinations?: string[];
}

/** Stream reads are made by the event source mapping with the function's role, not by its code. */
const STREAM_ACTIONS = ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator'];
/** No resource-level permission: granted on `*`, used when the mapping reads a stream. */
const LIST_STREAMS = 'dynamodb:ListStreams';
/** What Lambda needs the execution role to allow to send a failed batch to a destination. */
const DESTINATION_ACTIONS: Record<string, string> = { sqs: 'sqs:SendMessage', sns: 'sns:Publish' };

/** A local table ARN by its table (and index): `TablesKeys…/index/by-branch`. */
const named = (arn: string) => arn.replace(/^.*:table\/verify-/, '');

const describe = (operation: DynamoOperation) =>
  `${operation.action} on table ${operation.table}${operation.index ? ` index ${operation.index}` : ''}`;

const list = (value: string | readonly string[] | undefined): readonly string[] => [value ?? []].flat();

interface Request {
  action: string;
  arn: string;
  /** The defect's reason, given why the role refuses it (or what this check does not know of it). */
  line(problem: string): string;
}

/** The requests a role must allow: each call, each stream read, each failure destination. */
const requests = (assembly: Assembly, use: IamUse): Request[] => {
  const tables = new Set(assembly.tables.map((table) => table.name));
  const calls = [...new Map(use.operations.map((op) => [describe(op), op])).values()].map((op) => ({
    action: op.action,
    arn: tables.has(op.table) ? arnOf(op) : '',
    line: (problem: string) =>
      tables.has(op.table)
        ? `calls ${describe(op)}, which its role does not allow: ${problem}`
        : `calls ${describe(op)}, ${problem}`,
  }));
  const streams = use.streams.flatMap((stream) =>
    STREAM_ACTIONS.map((action) => ({
      action,
      arn: stream,
      line: (problem: string) =>
        `its event source mapping reads stream ${stream}, but its role does not allow ${action} on it: ${problem}`,
    })),
  );
  const destinations = (use.destinations ?? []).map((arn) => {
    const action = DESTINATION_ACTIONS[arn.split(':')[2] ?? ''] ?? '';
    return {
      action,
      arn,
      line: (problem: string) =>
        `its event source mapping sends failed batches to ${arn}, but ${action ? `its role does not allow ${action} on it: ` : ''}${problem}`,
    };
  });
  return [...calls, ...streams, ...destinations];
};

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
  const of = (reason: string, statement: Statement) => ({
    check: 'iam',
    resource: statement.source?.split(' ')[0] ?? use.functionLogicalId,
    reason: `${reason} (function ${use.functionLogicalId})`,
  });
  return statements
    .filter((statement) => statement.Effect === 'Allow')
    .flatMap((statement): Defect[] => {
      if (statement.NotAction !== undefined || statement.NotResource !== undefined) {
        return [
          of(
            `${statement.source} allows by exclusion (NotAction/NotResource): more than any run can show it uses`,
            statement,
          ),
        ];
      }
      return list(statement.Action)
        .filter((action) => action.toLowerCase().startsWith('dynamodb:'))
        .flatMap((action) => {
          if (/[*?]/.test(action))
            return [of(`${action} is granted by wildcard: more than the calls the run made`, statement)];
          if (action === LIST_STREAMS)
            return use.streams.length ? [] : [of(`${action} is granted but the run never used it`, statement)];
          const candidates = STREAM_ACTIONS.includes(action) ? streamArns : tableArns;
          return list(statement.Resource).flatMap((resource) => {
            const covered = candidates.filter((arn) => resourceMatches(resource, arn));
            if (!/[*?]/.test(resource) || covered.length === 0) {
              return used(action, resource) || covered.some((arn) => used(action, arn))
                ? []
                : [of(`${action} on ${resource} is granted but the run never used it`, statement)];
            }
            const never = covered.filter((arn) => !used(action, arn));
            return never.length
              ? [
                  of(
                    `${action} on ${resource} is granted on ${never.map(named).join(', ')}, which the run never used it on`,
                    statement,
                  ),
                ]
              : [];
          });
        });
    });
};

export const checkIam = (assembly: Assembly, uses: readonly IamUse[]): { defects: Defect[]; unused: string[] } => {
  const defects: Defect[] = [];
  const unused: string[] = [];
  for (const use of uses) {
    const statements = use.roleLogicalId ? (assembly.statements.get(use.roleLogicalId) ?? []) : [];
    for (const request of requests(assembly, use)) {
      const problem = !request.arn
        ? 'a table the template does not define'
        : !request.action
          ? 'a destination this check does not know'
          : evaluate(statements, request.action, request.arn).reason;
      if (problem) defects.push({ check: 'iam', resource: use.functionLogicalId, reason: request.line(problem) });
    }
    const grants = unusedGrants(assembly, use, statements);
    defects.push(...grants);
    unused.push(...grants.map((grant) => grant.reason));
  }
  return { defects, unused };
};

const BUS_ENV = 'KEY_EVENT_BUS_NAME';

/**
 * Key events reach the bus: a function told a bus (KEY_EVENT_BUS_NAME) must be allowed
 * events:PutEvents on it, the name must be a bus of the stack, and no role may put events on a
 * bus of the stack without a function that sends them.
 */
export const checkKeyEventGrants = (assembly: Assembly): Defect[] => {
  const resolver = new Resolver(assembly.resources);
  const buses = Object.keys(assembly.resources).filter(
    (id) => assembly.resources[id]?.Type === 'AWS::Events::EventBus',
  );
  const mayPut = (roleId: string | undefined, bus: string) =>
    evaluate(
      roleId ? (assembly.statements.get(roleId) ?? []) : [],
      'events:PutEvents',
      resolver.resolve({ 'Fn::GetAtt': [bus, 'Arn'] }) ?? '',
    );
  const senders = new Set(
    assembly.functions.filter((fn) => fn.environment[BUS_ENV] !== undefined).map((fn) => fn.roleLogicalId),
  );
  const defect = (resource: string, reason: string): Defect => ({ check: 'key-events', resource, reason });
  return [
    ...assembly.functions.flatMap((fn) => {
      const bus = fn.environment[BUS_ENV];
      if (bus === undefined) return [];
      if (!buses.includes(bus))
        return [defect(fn.logicalId, `${BUS_ENV} names ${bus}, which is not an event bus of the stack`)];
      const decision = mayPut(fn.roleLogicalId, bus);
      return decision.allowed
        ? []
        : [
            defect(
              fn.logicalId,
              `sends key events to ${bus} but its role may not events:PutEvents on it: ${decision.reason}`,
            ),
          ];
    }),
    ...[...assembly.statements.keys()]
      .filter((roleId) => !senders.has(roleId) && buses.some((bus) => mayPut(roleId, bus).allowed))
      .map((roleId) => defect(roleId, 'events:PutEvents is granted but no function with this role sends key events')),
  ];
};

const sameSet = (a: readonly string[], b: readonly string[]) => [...a].sort().join() === [...b].sort().join();

const show = (metric: { namespace: string; name: string; dimensions: Record<string, string | undefined> }) =>
  `${metric.namespace}/${metric.name} {${Object.entries(metric.dimensions)
    .map(([name, value]) => `${name}=${value ?? '?'}`)
    .join(', ')}}`;

/** Each alarm on a custom metric watches one the run emitted (namespace, name, dimensions); AWS metrics are the nag rules'. */
export const checkAlarms = (alarms: readonly TemplateAlarm[], emitted: readonly EmittedMetric[]): Defect[] =>
  alarms.flatMap((alarm) =>
    alarm.metrics
      .filter((metric) => !metric.namespace.startsWith('AWS/'))
      .filter(
        (metric) =>
          !emitted.some(
            (candidate) =>
              candidate.namespace === metric.namespace &&
              candidate.name === metric.name &&
              sameSet(Object.keys(candidate.dimensions), Object.keys(metric.dimensions)) &&
              Object.entries(metric.dimensions).every(([name, value]) => candidate.dimensions[name] === value),
          ),
      )
      .map((metric) => {
        const near = [...new Set(emitted.filter((candidate) => candidate.name === metric.name).map(show))];
        return {
          check: 'alarm-metrics',
          resource: alarm.logicalId,
          reason: `watches ${show(metric)}, which the run never emitted${near.length ? ` (emitted: ${near.join('; ')})` : ''}`,
        };
      }),
  );
