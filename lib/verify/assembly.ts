/**
 * Reads a synthesized cloud assembly (cdk.out) as CloudFormation will see it: the stack template,
 * its functions (asset directory, handler, environment), tables, routes, IAM statements, event
 * source mappings and alarms. Intrinsics are resolved once, here, against a local world: a table's
 * name is a local table, a resource's ARN a local ARN, so what the template wires can run here.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { CloudAssembly } from 'aws-cdk-lib/cx-api';
import type { Statement } from '../infra/nag/iam';
import { asList, type Json } from '../infra/nag/rule';

export type { Json };

export const LOCAL_ACCOUNT = '000000000000';
export const LOCAL_REGION = 'us-east-1';

/** One stack's template as the verifier reads it (`assemblyOf`). */
export type Assembly = ReturnType<typeof assemblyOf>;
export type TemplateTable = Assembly['tables'][number];
export type TemplateFunction = Assembly['functions'][number];
export type TemplateRoute = Assembly['routes'][number];
export type TemplateAlarm = Assembly['alarms'][number];

const PSEUDO: Record<string, string> = {
  'AWS::Region': LOCAL_REGION,
  'AWS::AccountId': LOCAL_ACCOUNT,
  'AWS::Partition': 'aws',
  'AWS::URLSuffix': 'amazonaws.com',
};

/** Local names and ARNs of what a template's references point at. */
class Resolver {
  constructor(private readonly resources: Record<string, Json>) {}

  tableName = (logicalId: string) => `verify-${logicalId}`;

  tableArn = (logicalId: string) =>
    `arn:aws:dynamodb:${LOCAL_REGION}:${LOCAL_ACCOUNT}:table/${this.tableName(logicalId)}`;

  /** The value of an intrinsic (Ref, GetAtt, Join, Sub), or undefined when it can't be known here. */
  resolve(value: unknown): string | undefined {
    if (['string', 'number', 'boolean'].includes(typeof value)) return String(value);
    const node = (value ?? {}) as Json;
    if ('Ref' in node) return this.ref(String(node.Ref));
    if ('Fn::GetAtt' in node) return this.getAtt(...(asList<string>(node['Fn::GetAtt']) as [string, string]));
    if ('Fn::Join' in node) {
      const parts = asList<unknown>(node['Fn::Join'][1]).map((part) => this.resolve(part));
      return parts.includes(undefined) ? undefined : parts.join(node['Fn::Join'][0]);
    }
    if (typeof node['Fn::Sub'] !== 'string') return undefined;
    const names = [...node['Fn::Sub'].matchAll(/\$\{([^}]+)\}/g)].map(([, name]) => name!);
    const values = names.map((name) =>
      name.includes('.') ? this.getAtt(...(name.split('.') as [string, string])) : this.ref(name),
    );
    return values.includes(undefined)
      ? undefined
      : names.reduce((text, name, i) => text.replace(`\${${name}}`, values[i]!), node['Fn::Sub']);
  }

  private ref(id: string): string | undefined {
    const resource = this.resources[id];
    return PSEUDO[id] ?? (!resource ? undefined : resource.Type === 'AWS::DynamoDB::Table' ? this.tableName(id) : id);
  }

  private getAtt(id: string, attribute: string): string | undefined {
    const type = this.resources[id]?.Type as string | undefined;
    if (!type || !attribute) return undefined;
    if (type === 'AWS::DynamoDB::Table' && attribute === 'StreamArn') return `${this.tableArn(id)}/stream/local`;
    if (type === 'AWS::DynamoDB::Table' && attribute === 'Arn') return this.tableArn(id);
    const service = type.split('::')[1]?.toLowerCase();
    return attribute === 'Arn' ? `arn:aws:${service}:${LOCAL_REGION}:${LOCAL_ACCOUNT}:${id}` : `${id}.${attribute}`;
  }
}

/**
 * Whether a value matches a filter pattern as Lambda's event filtering does, for what its filters
 * use here: nested fields (a list in the value is crushed: any element may match), a list of exact
 * values, `{ "exists": … }`.
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
  if (Array.isArray(value)) return value.some((element) => matchesPattern(pattern, element));
  return Object.entries(pattern).every(([name, inner]) => matchesPattern(inner, (value as Json | undefined)?.[name]));
};

/** Reads one stack of the assembly in `dir` (the only one, or the one named). */
export const readAssembly = (dir: string, stackName?: string): Assembly => {
  if (!existsSync(join(dir, 'manifest.json'))) throw new Error(`${dir} is not a cloud assembly (no manifest.json)`);
  const stacks = new CloudAssembly(dir).stacksRecursively;
  const chosen = stackName ? stacks.find((stack) => stack.id === stackName) : stacks[0];
  if (!chosen) throw new Error(`No stack ${stackName ?? ''} in ${dir}`);
  if (!stackName && stacks.length > 1) {
    throw new Error(`${dir} holds ${stacks.length} stacks; name one (${stacks.map((stack) => stack.id).join(', ')})`);
  }
  return assemblyOf(chosen.id, chosen.template as Json, dir);
};

/** Every statement of each role (inline, then attached policies), its resources resolved. */
const statementsOf = (ofType: (type: string) => [string, Json][], resolver: Resolver) => {
  const statements = new Map<string, Statement[]>();
  const addStatements = (roleId: string, document: Json | undefined, policy: string) => {
    const resolved = (value: unknown) =>
      value === undefined ? undefined : asList(value).map((one) => resolver.resolve(one) ?? '?');
    statements.set(roleId, [
      ...(statements.get(roleId) ?? []),
      ...asList<Json>(document?.Statement).map((statement, i) => ({
        ...statement,
        Resource: resolved(statement.Resource),
        NotResource: resolved(statement.NotResource),
        source: `${policy} statement ${statement.Sid ?? i + 1}`,
      })),
    ]);
  };
  for (const [id, { Properties }] of ofType('AWS::IAM::Role'))
    for (const policy of asList<Json>(Properties.Policies)) addStatements(id, policy.PolicyDocument, id);
  for (const [id, { Properties }] of ofType('AWS::IAM::Policy'))
    for (const role of asList<Json>(Properties.Roles))
      if (typeof role?.Ref === 'string') addStatements(role.Ref, Properties.PolicyDocument, id);
  return statements;
};

/**
 * Each event source mapping that reads a table's stream: its batch size, the times Lambda delivers
 * a failing batch again (absent: until the record expires), its filter patterns (absent: every record).
 */
const mappingsOf = (
  ofType: (type: string) => [string, Json][],
  resolver: Resolver,
  functionOf: (value: Json | undefined) => string | undefined,
) =>
  ofType('AWS::Lambda::EventSourceMapping').flatMap(([logicalId, { Properties: p }]) => {
    const functionLogicalId = functionOf(p.FunctionName) ?? resolver.resolve(p.FunctionName);
    const [tableLogicalId, attribute] = asList<string>(p.EventSourceArn?.['Fn::GetAtt']);
    if (!functionLogicalId || !tableLogicalId || attribute !== 'StreamArn') return [];
    let filters: Json[] | undefined;
    try {
      filters = asList<Json>(p.FilterCriteria?.Filters).map((filter) => JSON.parse(String(filter.Pattern)) as Json);
    } catch {
      // An unreadable filter lets every record through (the stream-filter rule names it).
    }
    return [
      {
        logicalId,
        functionLogicalId,
        tableLogicalId,
        batchSize: Number(p.BatchSize ?? 100),
        ...(p.MaximumRetryAttempts >= 0 ? { retryAttempts: Number(p.MaximumRetryAttempts) } : {}),
        ...(filters?.length ? { filters } : {}),
      },
    ];
  });

/** One stack's template read as the verifier sees it; `dir` is the assembly holding its code assets. */
export const assemblyOf = (stack: string, template: Json, dir: string) => {
  const resources = (template?.Resources ?? {}) as Record<string, Json>;
  const resolver = new Resolver(resources);
  const ofType = (type: string): [string, Json][] =>
    Object.entries(resources)
      .filter(([, resource]) => resource?.Type === type)
      .map(([id, resource]) => [id, { ...resource, Properties: resource.Properties ?? {} }]);
  /** The logical id of the function a reference (GetAtt or Ref) points at. */
  const functionOf = (value: Json | undefined): string | undefined =>
    [value?.Ref, asList<string>(value?.['Fn::GetAtt'])[0]].find(
      (id) => typeof id === 'string' && resources[id]?.Type === 'AWS::Lambda::Function',
    );
  const metricOf = (metric: Json) => ({
    namespace: String(metric.Namespace),
    name: String(metric.MetricName),
    dimensions: Object.fromEntries(
      asList<Json>(metric.Dimensions).map((d) => [String(d.Name), resolver.resolve(d.Value)]),
    ),
  });
  const statements = statementsOf(ofType, resolver);
  return {
    stack,
    template,
    resources,
    outputs: Object.fromEntries(
      Object.entries<Json>(template?.Outputs ?? {}).flatMap(([name, output]) => {
        const value = resolver.resolve(output?.Value);
        return value === undefined ? [] : [[name, value]];
      }),
    ),
    tables: ofType('AWS::DynamoDB::Table').map(([logicalId, { Properties }]) => ({
      logicalId,
      name: resolver.tableName(logicalId),
      arn: resolver.tableArn(logicalId),
      properties: Properties,
      indexes: asList<Json>(Properties.GlobalSecondaryIndexes).map((index) => String(index.IndexName)),
      keyAttributes: asList<Json>(Properties.KeySchema).map((key) => String(key.AttributeName)),
      ...(Properties.StreamSpecification ? { streamArn: `${resolver.tableArn(logicalId)}/stream/local` } : {}),
    })),
    functions: ofType('AWS::Lambda::Function').map(([logicalId, { Properties, Metadata }]) => {
      // The asset CloudFormation uploads: `<hash>.zip` in S3, staged as `asset.<hash>` in the assembly.
      const s3Key =
        typeof Properties.Code?.S3Key === 'string' ? `asset.${Properties.Code.S3Key.replace(/\.zip$/, '')}` : undefined;
      const assetPath = (Metadata?.['aws:asset:path'] as string | undefined) ?? s3Key;
      const roleLogicalId = asList<string>(Properties.Role?.['Fn::GetAtt'])[0];
      return {
        logicalId,
        codeDir: assetPath ? join(dir, assetPath) : '',
        handler: String(Properties.Handler ?? ''),
        runtime: String(Properties.Runtime ?? ''),
        memorySize: Number(Properties.MemorySize ?? 128),
        timeoutSeconds: Number(Properties.Timeout ?? 3),
        environment: Object.fromEntries(
          Object.entries<unknown>(Properties.Environment?.Variables ?? {}).map(([name, value]) => [
            name,
            resolver.resolve(value),
          ]),
        ),
        ...(roleLogicalId ? { roleLogicalId } : {}),
      };
    }),
    routes: ofType('AWS::ApiGatewayV2::Route').flatMap(([logicalId, { Properties }]) => {
      const integration = resources[(resolver.resolve(Properties.Target) ?? '').replace(/^integrations\//, '')];
      const functionLogicalId = functionOf(integration?.Properties?.IntegrationUri);
      return functionLogicalId ? [{ logicalId, routeKey: String(Properties.RouteKey), functionLogicalId }] : [];
    }),
    stageName: String(ofType('AWS::ApiGatewayV2::Stage')[0]?.[1].Properties.StageName ?? '$default'),
    mappings: mappingsOf(ofType, resolver, functionOf),
    alarms: ofType('AWS::CloudWatch::Alarm').map(([logicalId, { Properties: p }]) => ({
      logicalId,
      metrics: p.MetricName
        ? [metricOf(p)]
        : asList<Json>(p.Metrics).flatMap((query) => (query.MetricStat ? [metricOf(query.MetricStat.Metric)] : [])),
    })),
    statements,
  };
};
