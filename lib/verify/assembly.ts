/**
 * Reads a synthesized cloud assembly (cdk.out) as CloudFormation will see it: the stack templates,
 * their functions (asset directory, handler, environment), tables, HTTP API routes, IAM policies,
 * event source mappings and alarms. Intrinsic functions are resolved against a local world: a
 * table's name is a local table, its ARN a local ARN, so what the template wires can run here.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Statement } from './iam';

/** CloudFormation and DynamoDB JSON, whose shape depends on the resource type or the request. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = Record<string, any>;

export const LOCAL_ACCOUNT = '000000000000';
export const LOCAL_REGION = 'us-east-1';

export interface TemplateTable {
  logicalId: string;
  /** Name on the local DynamoDB. */
  name: string;
  arn: string;
  properties: Json;
  indexes: string[];
  streamArn?: string;
}

export interface TemplateFunction {
  logicalId: string;
  /** Directory of the bundled code (the asset CloudFormation uploads). */
  codeDir: string;
  /** `index.handler`: module and export. */
  handler: string;
  runtime: string;
  memorySize: number;
  /** Seconds Lambda lets one invocation run (the template's Timeout, default 3). */
  timeoutSeconds: number;
  /** The environment with every reference resolved; `undefined` where it could not be. */
  environment: Record<string, string | undefined>;
  roleLogicalId?: string;
}

export interface TemplateRoute {
  logicalId: string;
  routeKey: string;
  functionLogicalId: string;
}

export interface EventSourceMapping {
  logicalId: string;
  functionLogicalId: string;
  /** The table whose stream feeds the function. */
  tableLogicalId: string;
  batchSize: number;
  /** Times Lambda delivers a failing batch again (MaximumRetryAttempts; absent: until the record expires). */
  retryAttempts?: number;
  /** ARN of the on-failure destination (an SQS queue or SNS topic) the mapping sends failed batches to. */
  onFailure?: string;
  /** The patterns of its filter (a record passes when one matches); absent: every record. */
  filters?: Json[];
}

export interface AlarmMetric {
  namespace: string;
  name: string;
  dimensions: Record<string, string | undefined>;
}

export interface TemplateAlarm {
  logicalId: string;
  metrics: AlarmMetric[];
}

export interface Assembly {
  stack: string;
  /** The template as synthesized (the stack's nag rules read it through CfnInclude). */
  template: Json;
  resources: Record<string, Json>;
  /** The template's Outputs section: output name → `{ Value, Description }`. */
  outputs: Record<string, Json>;
  tables: TemplateTable[];
  functions: TemplateFunction[];
  routes: TemplateRoute[];
  stageName: string;
  mappings: EventSourceMapping[];
  alarms: TemplateAlarm[];
  /** Every statement of each role (Allow and Deny), resources resolved, by role logical id. */
  statements: Map<string, Statement[]>;
}

const asArray = <T>(value: T | T[] | undefined): T[] =>
  value === undefined ? [] : Array.isArray(value) ? value : [value];

/** Local names and ARNs of what a template's references point at. */
export class Resolver {
  constructor(private readonly resources: Record<string, Json>) {}

  tableName(logicalId: string): string {
    return `verify-${logicalId}`;
  }

  tableArn(logicalId: string): string {
    return `arn:aws:dynamodb:${LOCAL_REGION}:${LOCAL_ACCOUNT}:table/${this.tableName(logicalId)}`;
  }

  /** The value of an intrinsic, or undefined when it can't be known here. */
  resolve(value: unknown): string | undefined {
    if (typeof value === 'string') return value;
    if (typeof value === 'number' || typeof value === 'boolean') return String(value);
    if (value === null || typeof value !== 'object') return undefined;
    const node = value as Json;
    if ('Ref' in node) return this.ref(String(node.Ref));
    if ('Fn::GetAtt' in node) {
      const [id, attribute] = asArray<string>(node['Fn::GetAtt']);
      return id && attribute ? this.getAtt(id, attribute) : undefined;
    }
    if ('Fn::Join' in node) {
      const [separator, parts] = node['Fn::Join'] as [string, unknown[]];
      const resolved = parts.map((part) => this.resolve(part));
      return resolved.every((part) => part !== undefined) ? resolved.join(separator) : undefined;
    }
    if ('Fn::Sub' in node && typeof node['Fn::Sub'] === 'string') {
      let unresolved = false;
      const text = (node['Fn::Sub'] as string).replace(/\$\{([^}]+)\}/g, (_match, name: string) => {
        const [id, attribute] = name.split('.');
        const resolved = attribute ? this.getAtt(id!, attribute) : this.ref(id!);
        if (resolved === undefined) unresolved = true;
        return resolved ?? '';
      });
      return unresolved ? undefined : text;
    }
    return undefined;
  }

  private ref(id: string): string | undefined {
    if (id === 'AWS::Region') return LOCAL_REGION;
    if (id === 'AWS::AccountId') return LOCAL_ACCOUNT;
    if (id === 'AWS::Partition') return 'aws';
    if (id === 'AWS::URLSuffix') return 'amazonaws.com';
    const resource = this.resources[id];
    if (!resource) return undefined;
    if (resource.Type === 'AWS::DynamoDB::Table') return this.tableName(id);
    return id;
  }

  private getAtt(id: string, attribute: string): string | undefined {
    const resource = this.resources[id];
    if (!resource) return undefined;
    if (resource.Type === 'AWS::DynamoDB::Table') {
      if (attribute === 'Arn') return this.tableArn(id);
      if (attribute === 'StreamArn') return `${this.tableArn(id)}/stream/local`;
    }
    if (attribute === 'Arn') {
      const service = String(resource.Type).split('::')[1]?.toLowerCase() ?? 'unknown';
      return `arn:aws:${service}:${LOCAL_REGION}:${LOCAL_ACCOUNT}:${id}`;
    }
    return `${id}.${attribute}`;
  }
}

/** The patterns of an event source mapping's filter; undefined when it has no readable filter. */
export const filterPatterns = (properties: Json): Json[] | undefined => {
  try {
    const filters = asArray<Json>(properties.FilterCriteria?.Filters);
    return filters.length === 0 ? undefined : filters.map((filter) => JSON.parse(String(filter.Pattern)) as Json);
  } catch {
    return undefined;
  }
};

/**
 * Whether a value matches a filter pattern as Lambda's event filtering does, for what its filters
 * use here: nested fields, a list of exact values, `{ "exists": … }`.
 */
export const matchesPattern = (pattern: unknown, value: unknown): boolean => {
  if (Array.isArray(pattern)) {
    return pattern.some((rule: unknown) =>
      rule !== null && typeof rule === 'object' && 'exists' in rule
        ? (value !== undefined) === (rule as { exists: boolean }).exists
        : rule === value,
    );
  }
  if (pattern === null || typeof pattern !== 'object') return false;
  return Object.entries(pattern).every(([name, inner]) => matchesPattern(inner, (value as Json | undefined)?.[name]));
};

/** Stack artifacts of the assembly's manifest, with their template files. */
const stacksOf = (dir: string): { stack: string; template: Json }[] => {
  const manifestFile = join(dir, 'manifest.json');
  if (!existsSync(manifestFile)) throw new Error(`${dir} is not a cloud assembly (no manifest.json)`);
  const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as Json;
  return Object.entries<Json>(manifest.artifacts ?? {})
    .filter(([, artifact]) => artifact.type === 'aws:cloudformation:stack')
    .map(([stack, artifact]) => ({
      stack,
      template: JSON.parse(readFileSync(join(dir, artifact.properties.templateFile), 'utf8')) as Json,
    }));
};

/** Reads one stack of the assembly in `dir` (the only one, or the one named). */
export const readAssembly = (dir: string, stackName?: string): Assembly => {
  const stacks = stacksOf(dir);
  const chosen = stackName ? stacks.find(({ stack }) => stack === stackName) : stacks[0];
  if (!chosen) throw new Error(`No stack ${stackName ?? ''} in ${dir}`);
  if (!stackName && stacks.length > 1) {
    throw new Error(`${dir} holds ${stacks.length} stacks; name one (${stacks.map((s) => s.stack).join(', ')})`);
  }
  return assemblyOf(chosen.stack, chosen.template, dir);
};

/** What each reader of a template's resources works from. */
interface TemplateContext {
  resources: Record<string, Json>;
  resolver: Resolver;
  /** Directory of the assembly holding the code assets. */
  dir: string;
}

const ofType = ({ resources }: TemplateContext, type: string): [string, Json][] =>
  Object.entries(resources).filter(([, resource]) => resource?.Type === type);

const tablesOf = (context: TemplateContext): TemplateTable[] => {
  const { resolver } = context;
  return ofType(context, 'AWS::DynamoDB::Table').map(([logicalId, resource]) => ({
    logicalId,
    name: resolver.tableName(logicalId),
    arn: resolver.tableArn(logicalId),
    properties: resource.Properties ?? {},
    indexes: asArray<Json>(resource.Properties?.GlobalSecondaryIndexes).map((index) => String(index.IndexName)),
    ...(resource.Properties?.StreamSpecification ? { streamArn: `${resolver.tableArn(logicalId)}/stream/local` } : {}),
  }));
};

const functionOf =
  ({ resolver, dir }: TemplateContext) =>
  ([logicalId, resource]: [string, Json]): TemplateFunction => {
    const properties = resource.Properties ?? {};
    // The asset CloudFormation uploads: `<hash>.zip` in S3, staged as `asset.<hash>` in the assembly.
    const s3Key = typeof properties.Code?.S3Key === 'string' ? (properties.Code.S3Key as string) : undefined;
    const assetPath =
      (resource.Metadata?.['aws:asset:path'] as string | undefined) ??
      (s3Key ? `asset.${s3Key.replace(/\.zip$/, '')}` : undefined);
    const variables = (properties.Environment?.Variables ?? {}) as Record<string, unknown>;
    const roleLogicalId = asArray<string>(properties.Role?.['Fn::GetAtt'])[0];
    return {
      logicalId,
      codeDir: assetPath ? join(dir, assetPath) : '',
      handler: String(properties.Handler ?? ''),
      runtime: String(properties.Runtime ?? ''),
      memorySize: Number(properties.MemorySize ?? 128),
      timeoutSeconds: Number(properties.Timeout ?? 3),
      environment: Object.fromEntries(
        Object.entries(variables).map(([name, value]) => [name, resolver.resolve(value)]),
      ),
      ...(roleLogicalId ? { roleLogicalId } : {}),
    };
  };

const functionsOf = (context: TemplateContext): TemplateFunction[] =>
  ofType(context, 'AWS::Lambda::Function').map(functionOf(context));

/** The logical id of the function an ARN reference (GetAtt or Ref) points at. */
const functionOfArn = ({ resources }: TemplateContext, value: unknown): string | undefined => {
  const node = value as Json | undefined;
  const getAtt = asArray<string>(node?.['Fn::GetAtt']);
  if (getAtt[0] && resources[getAtt[0]]?.Type === 'AWS::Lambda::Function') return getAtt[0];
  const ref = node?.Ref as string | undefined;
  return ref && resources[ref]?.Type === 'AWS::Lambda::Function' ? ref : undefined;
};

const routesOf = (context: TemplateContext): TemplateRoute[] =>
  ofType(context, 'AWS::ApiGatewayV2::Route').flatMap(([logicalId, resource]): TemplateRoute[] => {
    const target = context.resolver.resolve(resource.Properties?.Target) ?? '';
    const integration = context.resources[target.replace(/^integrations\//, '')];
    const functionLogicalId = functionOfArn(context, integration?.Properties?.IntegrationUri);
    return functionLogicalId ? [{ logicalId, routeKey: String(resource.Properties?.RouteKey), functionLogicalId }] : [];
  });

const mappingsOf = (context: TemplateContext): EventSourceMapping[] =>
  ofType(context, 'AWS::Lambda::EventSourceMapping').flatMap(([logicalId, resource]): EventSourceMapping[] => {
    const { resolver } = context;
    const properties = resource.Properties ?? {};
    const functionLogicalId =
      functionOfArn(context, properties.FunctionName) ?? resolver.resolve(properties.FunctionName);
    const [tableLogicalId, attribute] = asArray<string>(properties.EventSourceArn?.['Fn::GetAtt']);
    if (!functionLogicalId || !tableLogicalId || attribute !== 'StreamArn') return [];
    const onFailure = resolver.resolve(properties.DestinationConfig?.OnFailure?.Destination);
    const filters = filterPatterns(properties);
    return [
      {
        logicalId,
        functionLogicalId,
        tableLogicalId,
        batchSize: Number(properties.BatchSize ?? 100),
        ...(Number.isInteger(properties.MaximumRetryAttempts) && properties.MaximumRetryAttempts >= 0
          ? { retryAttempts: Number(properties.MaximumRetryAttempts) }
          : {}),
        ...(onFailure ? { onFailure } : {}),
        ...(filters ? { filters } : {}),
      },
    ];
  });

const metricOf = (resolver: Resolver, metric: Json): AlarmMetric => ({
  namespace: String(metric.Namespace),
  name: String(metric.MetricName),
  dimensions: Object.fromEntries(
    asArray<Json>(metric.Dimensions).map((dimension) => [String(dimension.Name), resolver.resolve(dimension.Value)]),
  ),
});

const alarmsOf = (context: TemplateContext): TemplateAlarm[] =>
  ofType(context, 'AWS::CloudWatch::Alarm').map(([logicalId, resource]) => {
    const properties = resource.Properties ?? {};
    const metrics = properties.MetricName
      ? [metricOf(context.resolver, properties)]
      : asArray<Json>(properties.Metrics)
          .filter((query) => query.MetricStat)
          .map((query) => metricOf(context.resolver, query.MetricStat.Metric));
    return { logicalId, metrics };
  });

/** Every statement of each role: its inline policies, then the policies attached to it. */
const statementsOf = (context: TemplateContext): Map<string, Statement[]> => {
  const statements = new Map<string, Statement[]>();
  const resolved = (value: unknown) =>
    value === undefined ? undefined : asArray<unknown>(value).map((one) => context.resolver.resolve(one) ?? '?');
  const addStatements = (roleId: string, document: Json | undefined, policy: string) => {
    const list = statements.get(roleId) ?? [];
    asArray<Json>(document?.Statement).forEach((statement, i) =>
      list.push({
        ...statement,
        Resource: resolved(statement.Resource),
        NotResource: resolved(statement.NotResource),
        source: `${policy} statement ${statement.Sid ?? i + 1}`,
      }),
    );
    statements.set(roleId, list);
  };
  for (const [logicalId, resource] of ofType(context, 'AWS::IAM::Role')) {
    for (const policy of asArray<Json>(resource.Properties?.Policies))
      addStatements(logicalId, policy.PolicyDocument, logicalId);
  }
  for (const [logicalId, resource] of ofType(context, 'AWS::IAM::Policy')) {
    for (const role of asArray<Json>(resource.Properties?.Roles)) {
      if (typeof role?.Ref === 'string') addStatements(role.Ref, resource.Properties?.PolicyDocument, logicalId);
    }
  }
  return statements;
};

/** One stack's template read as the verifier sees it; `dir` is the assembly holding its code assets. */
export const assemblyOf = (stack: string, template: Json, dir: string): Assembly => {
  const resources = (template?.Resources ?? {}) as Record<string, Json>;
  const context: TemplateContext = { resources, resolver: new Resolver(resources), dir };
  const stage = ofType(context, 'AWS::ApiGatewayV2::Stage')[0]?.[1];
  return {
    stack,
    template,
    resources,
    outputs: (template?.Outputs ?? {}) as Record<string, Json>,
    tables: tablesOf(context),
    functions: functionsOf(context),
    routes: routesOf(context),
    stageName: String(stage?.Properties?.StageName ?? '$default'),
    mappings: mappingsOf(context),
    alarms: alarmsOf(context),
    statements: statementsOf(context),
  };
};
