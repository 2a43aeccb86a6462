/**
 * Template assertions on the synthesized stack (bundling skipped; see bundle.test.ts for the
 * real bundles). Expected values come from the shared route and table definitions, so the stack
 * is checked against the same source the local gateway and bootstrap use.
 */
import { Match } from 'aws-cdk-lib/assertions';
import { createTableInput, tableDefinitions, type TableDefinition } from '../../shared/tables';
import { fallbackEntry, routeKey, routes } from '../../shared/routes';
import {
  type ApiFunction,
  ENDPOINT_MEMORY_MB,
  ENDPOINT_TIMEOUT,
  FALLBACK_MEMORY_MB,
} from '../../lib/infra/api-function';
import { asArray, buildStack, logicalId, resourcesOfType } from './support';

const { stack, template } = buildStack();

const functionsByName = (): Record<string, ApiFunction> => ({ ...stack.functions, Fallback: stack.fallback });

describe('HTTP API', () => {
  it('has one stage, named api, auto-deployed, throttled with the defaults', () => {
    template.resourceCountIs('AWS::ApiGatewayV2::Stage', 1);
    template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      StageName: 'api',
      AutoDeploy: true,
      DefaultRouteSettings: { ThrottlingRateLimit: 1000, ThrottlingBurstLimit: 2000 },
    });
  });

  it('routes each shared route to its own function, and $default to the fallback function', () => {
    const routeResources = Object.values(resourcesOfType(template, 'AWS::ApiGatewayV2::Route'));
    const integrations = resourcesOfType(template, 'AWS::ApiGatewayV2::Integration');
    const targetFunction = (key: string): string => {
      const route = routeResources.find((candidate) => candidate.Properties.RouteKey === key);
      if (!route) throw new Error(`No route ${key}`);
      const integrationId = route.Properties.Target['Fn::Join'][1][1].Ref as string;
      const integration = integrations[integrationId];
      expect(integration?.Properties).toMatchObject({ IntegrationType: 'AWS_PROXY', PayloadFormatVersion: '2.0' });
      return integration?.Properties.IntegrationUri['Fn::GetAtt'][0];
    };

    expect(routeResources.map((route) => route.Properties.RouteKey).sort()).toEqual(
      [...routes.map(routeKey), '$default'].sort(),
    );
    for (const route of routes) {
      expect(targetFunction(routeKey(route))).toBe(logicalId(stack.functions[route.id].function));
    }
    expect(targetFunction('$default')).toBe(logicalId(stack.fallback.function));
  });

  it('writes JSON access logs, without request headers, to a log group with retention', () => {
    const stage = Object.values(resourcesOfType(template, 'AWS::ApiGatewayV2::Stage'))[0];
    const settings = stage?.Properties.AccessLogSettings;
    expect(settings.DestinationArn).toEqual({ 'Fn::GetAtt': [logicalId(stack.api.accessLogGroup), 'Arn'] });
    const format = JSON.parse(settings.Format);
    expect(format).toMatchObject({ requestId: '$context.requestId', status: '$context.status' });
    expect(settings.Format.toLowerCase()).not.toMatch(/authorization|header/);
    expect(resourcesOfType(template, 'AWS::Logs::LogGroup')[logicalId(stack.api.accessLogGroup)]).toMatchObject({
      Properties: { RetentionInDays: 30 },
      DeletionPolicy: 'Delete',
    });
  });

  it('has no CORS configuration', () => {
    template.hasResourceProperties('AWS::ApiGatewayV2::Api', {
      ProtocolType: 'HTTP',
      CorsConfiguration: Match.absent(),
    });
  });
});

describe('functions', () => {
  it('are five: one per route plus the fallback', () => {
    template.resourceCountIs('AWS::Lambda::Function', routes.length + 1);
    expect(stack.fallback.node.id).toBe('Fallback');
    expect(fallbackEntry).toBe('functions/fallback.ts');
  });

  it.each(Object.keys(functionsByName()))(
    '%s runs Node 24 on arm64 with tracing, Powertools settings and its log group',
    (name) => {
      const fn = functionsByName()[name]!;
      const properties = resourcesOfType(template, 'AWS::Lambda::Function')[logicalId(fn.function)]?.Properties;
      expect(properties).toMatchObject({
        Runtime: 'nodejs24.x',
        Architectures: ['arm64'],
        Handler: 'index.handler',
        TracingConfig: { Mode: 'Active' },
        LoggingConfig: { LogGroup: { Ref: logicalId(fn.logGroup) } },
        Environment: {
          Variables: {
            POWERTOOLS_SERVICE_NAME: 'branch-api',
            POWERTOOLS_METRICS_NAMESPACE: 'BranchApi',
            POWERTOOLS_LOG_LEVEL: 'INFO',
            NODE_OPTIONS: '--enable-source-maps',
          },
        },
      });
      expect(resourcesOfType(template, 'AWS::Logs::LogGroup')[logicalId(fn.logGroup)]).toMatchObject({
        Properties: { RetentionInDays: 30 },
        DeletionPolicy: 'Delete',
      });
    },
  );

  it('endpoint functions get the table names, usage retention and default rate limit; the fallback gets none', () => {
    for (const route of routes) {
      const variables = resourcesOfType(template, 'AWS::Lambda::Function')[
        logicalId(stack.functions[route.id].function)
      ]?.Properties.Environment.Variables;
      expect(variables).toMatchObject({
        KEYS_TABLE: { Ref: logicalId(stack.tables.keys) },
        USAGE_TABLE: { Ref: logicalId(stack.tables.usage) },
        BRANCH_DATA_TABLE: { Ref: logicalId(stack.tables.branchData) },
        RATE_LIMITS_TABLE: { Ref: logicalId(stack.tables.rateLimits) },
        USAGE_RETENTION_DAYS: '90',
        DEFAULT_RATE_LIMIT: '50/s',
      });
    }
    const fallbackVariables = resourcesOfType(template, 'AWS::Lambda::Function')[logicalId(stack.fallback.function)]
      ?.Properties.Environment.Variables;
    expect(Object.keys(fallbackVariables).filter((name) => name.endsWith('_TABLE'))).toEqual([]);
  });

  it('sizes endpoint functions for three 2 s DynamoDB calls, and the fallback smaller', () => {
    const functions = resourcesOfType(template, 'AWS::Lambda::Function');
    for (const route of routes) {
      expect(functions[logicalId(stack.functions[route.id].function)]?.Properties).toMatchObject({
        MemorySize: ENDPOINT_MEMORY_MB,
        Timeout: ENDPOINT_TIMEOUT.toSeconds(),
      });
    }
    expect(ENDPOINT_TIMEOUT.toSeconds()).toBeGreaterThanOrEqual(3 * 2);
    expect(functions[logicalId(stack.fallback.function)]?.Properties).toMatchObject({
      MemorySize: FALLBACK_MEMORY_MB,
      Timeout: 3,
    });
  });
});

describe('tables', () => {
  const tables = resourcesOfType(template, 'AWS::DynamoDB::Table');
  const tableOf = (definition: TableDefinition) => {
    const construct = {
      Keys: stack.tables.keys,
      Usage: stack.tables.usage,
      BranchData: stack.tables.branchData,
      RateLimits: stack.tables.rateLimits,
    }[definition.id];
    return tables[logicalId(construct)]!;
  };
  const sortBy = <T>(items: T[] | undefined, key: (item: T) => string) =>
    [...(items ?? [])].sort((a, b) => key(a).localeCompare(key(b)));

  it('are four, on demand, encrypted with the AWS managed key', () => {
    template.resourceCountIs('AWS::DynamoDB::Table', 4);
    for (const table of Object.values(tables)) {
      expect(table.Properties).toMatchObject({
        BillingMode: 'PAY_PER_REQUEST',
        SSESpecification: { SSEEnabled: true },
      });
      expect(table.Properties.TableName).toBeUndefined();
    }
  });

  it.each(tableDefinitions.map((definition) => [definition.id, definition] as const))(
    '%s has the keys and indexes of the shared definition (the same as the local tables)',
    (_id, definition) => {
      const expected = createTableInput(definition, 'unused');
      const { Properties: actual } = tableOf(definition);
      expect(actual.KeySchema).toEqual(expected.KeySchema);
      expect(sortBy(actual.AttributeDefinitions, (a: any) => a.AttributeName)).toEqual(
        sortBy(expected.AttributeDefinitions, (a) => a.AttributeName!),
      );
      expect(sortBy(actual.GlobalSecondaryIndexes, (i: any) => i.IndexName)).toEqual(
        sortBy(expected.GlobalSecondaryIndexes, (i) => i.IndexName!),
      );
    },
  );

  it('keys: by key hash, indexed by branch; point-in-time recovery; retained and deletion-protected', () => {
    const keys = tableOf(tableDefinitions[0]);
    expect(keys.Properties.KeySchema).toEqual([{ AttributeName: 'key_hash', KeyType: 'HASH' }]);
    expect(keys.Properties.GlobalSecondaryIndexes.map((index: any) => index.KeySchema[0].AttributeName)).toContain(
      'branch_id',
    );
    expect(keys.Properties).toMatchObject({
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      DeletionProtectionEnabled: true,
    });
    expect(keys).toMatchObject({ DeletionPolicy: 'Retain', UpdateReplacePolicy: 'Retain' });
  });

  it('usage: by branch and timestamp, indexed by key, with TTL; deleted with the stack', () => {
    const usage = tableOf(tableDefinitions[1]);
    expect(usage.Properties.KeySchema).toEqual([
      { AttributeName: 'branch_id', KeyType: 'HASH' },
      { AttributeName: 'sk', KeyType: 'RANGE' },
    ]);
    expect(usage.Properties.GlobalSecondaryIndexes[0].KeySchema[0].AttributeName).toBe('key_id');
    expect(usage.Properties.TimeToLiveSpecification).toEqual({ AttributeName: 'expires_at_epoch', Enabled: true });
    expect(usage.Properties.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: false });
    expect(usage).toMatchObject({ DeletionPolicy: 'Delete', UpdateReplacePolicy: 'Delete' });
  });

  it('branch data: by branch and sort key; point-in-time recovery; retained and deletion-protected', () => {
    const branchData = tableOf(tableDefinitions[2]);
    expect(branchData.Properties.KeySchema).toEqual([
      { AttributeName: 'branch_id', KeyType: 'HASH' },
      { AttributeName: 'sk', KeyType: 'RANGE' },
    ]);
    expect(branchData.Properties).toMatchObject({
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      DeletionProtectionEnabled: true,
    });
    expect(branchData).toMatchObject({ DeletionPolicy: 'Retain', UpdateReplacePolicy: 'Retain' });
  });

  it('rate limits: by pk only, no index, with TTL; deleted with the stack', () => {
    const rateLimits = tableOf(tableDefinitions[3]);
    expect(rateLimits.Properties.KeySchema).toEqual([{ AttributeName: 'pk', KeyType: 'HASH' }]);
    expect(rateLimits.Properties.GlobalSecondaryIndexes).toBeUndefined();
    expect(rateLimits.Properties.TimeToLiveSpecification).toEqual({ AttributeName: 'expires_at_epoch', Enabled: true });
    expect(rateLimits).toMatchObject({ DeletionPolicy: 'Delete', UpdateReplacePolicy: 'Delete' });
  });

  it('destroyData deletes keys and branch data with the stack and drops deletion protection', () => {
    const { template: throwaway } = buildStack({ destroyData: true });
    const all = Object.values(resourcesOfType(throwaway, 'AWS::DynamoDB::Table'));
    expect(all.map((table) => table.DeletionPolicy)).toEqual(['Delete', 'Delete', 'Delete', 'Delete']);
    expect(all.map((table) => table.Properties.DeletionProtectionEnabled ?? false)).toEqual([
      false,
      false,
      false,
      false,
    ]);
  });
});

describe('least privilege', () => {
  const policies = Object.values(resourcesOfType(template, 'AWS::IAM::Policy'));
  /** Renders a policy resource as text: `Table.Arn`, `Table.Arn/index/x`, `*`. */
  const render = (resource: any): string => {
    if (typeof resource === 'string') return resource;
    if (resource['Fn::GetAtt']) return `${resource['Fn::GetAtt'][0]}.${resource['Fn::GetAtt'][1]}`;
    if (resource['Fn::Join']) return resource['Fn::Join'][1].map(render).join(resource['Fn::Join'][0]);
    return JSON.stringify(resource);
  };
  /** Every `Allow action on resource` of a role, sorted. */
  const permissionsOf = (fn: ApiFunction): string[] =>
    policies
      .filter((policy) => policy.Properties.Roles.some((role: any) => role.Ref === logicalId(fn.role)))
      .flatMap((policy) => policy.Properties.PolicyDocument.Statement)
      .flatMap((statement: any) =>
        asArray(statement.Action).flatMap((action) =>
          asArray(statement.Resource).map((resource) => `${statement.Effect} ${action} ${render(resource)}`),
        ),
      )
      .sort();

  const baseline = (fn: ApiFunction) => [
    `Allow logs:CreateLogStream ${logicalId(fn.logGroup)}.Arn`,
    `Allow logs:PutLogEvents ${logicalId(fn.logGroup)}.Arn`,
    'Allow xray:PutTelemetryRecords *',
    'Allow xray:PutTraceSegments *',
  ];

  it.each(routes.map((route) => route.id))(
    '%s may GetItem keys, GetItem/Query branch data, PutItem usage, UpdateItem rate limits: nothing else',
    (id) => {
      const fn = stack.functions[id];
      const keys = logicalId(stack.tables.keys);
      const usage = logicalId(stack.tables.usage);
      const branchData = logicalId(stack.tables.branchData);
      const rateLimits = logicalId(stack.tables.rateLimits);
      expect(permissionsOf(fn)).toEqual(
        [
          ...baseline(fn),
          `Allow dynamodb:GetItem ${keys}.Arn`,
          `Allow dynamodb:GetItem ${branchData}.Arn`,
          `Allow dynamodb:GetItem ${branchData}.Arn/index/active-providers`,
          `Allow dynamodb:Query ${branchData}.Arn`,
          `Allow dynamodb:Query ${branchData}.Arn/index/active-providers`,
          `Allow dynamodb:PutItem ${usage}.Arn`,
          `Allow dynamodb:UpdateItem ${rateLimits}.Arn`,
        ].sort(),
      );
    },
  );

  it('the fallback function touches no table', () => {
    expect(permissionsOf(stack.fallback)).toEqual(baseline(stack.fallback).sort());
  });

  it('no role carries a managed policy; no wildcard action; no DynamoDB call but GetItem, Query, PutItem, UpdateItem', () => {
    for (const role of Object.values(resourcesOfType(template, 'AWS::IAM::Role'))) {
      expect(role.Properties.ManagedPolicyArns).toBeUndefined();
    }
    const actions = policies.flatMap((policy) =>
      policy.Properties.PolicyDocument.Statement.flatMap((statement: any) => asArray(statement.Action)),
    );
    expect(actions.filter((action: string) => action.includes('*'))).toEqual([]);
    expect([...new Set(actions.filter((action: string) => action.startsWith('dynamodb:')))].sort()).toEqual([
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:Query',
      'dynamodb:UpdateItem',
    ]);
    const effects = policies.flatMap((policy) => policy.Properties.PolicyDocument.Statement.map((s: any) => s.Effect));
    expect(new Set(effects)).toEqual(new Set(['Allow']));
  });
});

describe('alarms', () => {
  const alarms = resourcesOfType(template, 'AWS::CloudWatch::Alarm');
  const metricsOf = (alarm: { Properties?: any }): any[] =>
    alarm.Properties.Metrics?.filter((m: any) => m.MetricStat).map((m: any) => m.MetricStat.Metric) ?? [
      {
        MetricName: alarm.Properties.MetricName,
        Namespace: alarm.Properties.Namespace,
        Dimensions: alarm.Properties.Dimensions,
      },
    ];
  const findAlarms = (predicate: (metric: any) => boolean) =>
    Object.values(alarms).filter((alarm) => metricsOf(alarm).some(predicate));

  it('cover the API, every function, every table and usage writes, and send nothing without a topic', () => {
    expect(Object.keys(alarms)).toHaveLength(1 + 2 * (routes.length + 1) + 4 + 2);
    for (const alarm of Object.values(alarms)) {
      expect(alarm.Properties).toMatchObject({
        ComparisonOperator: 'GreaterThanThreshold',
        TreatMissingData: 'notBreaching',
      });
      expect(alarm.Properties.AlarmActions).toBeUndefined();
    }
  });

  it('fire on the 5xx rate of the api stage', () => {
    const [rate] = findAlarms((metric) => metric.MetricName === '5xx');
    expect(rate?.Properties).toMatchObject({ Threshold: 5, EvaluationPeriods: 2 });
    const expression = rate?.Properties.Metrics.find((m: any) => m.Expression);
    expect(expression.Expression).toBe('IF(requests > 0, 100 * errors / requests, 0)');
    expect(
      metricsOf(rate!)
        .map((metric) => metric.MetricName)
        .sort(),
    ).toEqual(['5xx', 'Count']);
    for (const metric of metricsOf(rate!)) {
      expect(metric.Namespace).toBe('AWS/ApiGateway');
      expect(metric.Dimensions).toEqual(
        expect.arrayContaining([
          { Name: 'ApiId', Value: { Ref: logicalId(stack.api.httpApi) } },
          { Name: 'Stage', Value: 'api' },
        ]),
      );
    }
  });

  it.each(Object.keys(functionsByName()))('fire on any error or throttle of %s', (name) => {
    const ref = { Ref: logicalId(functionsByName()[name]!.function) };
    for (const metricName of ['Errors', 'Throttles']) {
      const found = findAlarms(
        (metric) =>
          metric.MetricName === metricName &&
          metric.Namespace === 'AWS/Lambda' &&
          JSON.stringify(metric.Dimensions) === JSON.stringify([{ Name: 'FunctionName', Value: ref }]),
      );
      expect(found).toHaveLength(1);
      expect(found[0]?.Properties.Threshold).toBe(0);
    }
  });

  it.each(['keys', 'usage', 'branchData'] as const)('fire on read or write throttling of the %s table', (name) => {
    const ref = { Ref: logicalId(stack.tables[name]) };
    const [alarm] = findAlarms(
      (metric) => JSON.stringify(metric.Dimensions) === JSON.stringify([{ Name: 'TableName', Value: ref }]),
    );
    expect(
      metricsOf(alarm!)
        .map((metric) => metric.MetricName)
        .sort(),
    ).toEqual(['ReadThrottleEvents', 'WriteThrottleEvents']);
    expect(alarm?.Properties.Threshold).toBe(0);
  });

  it.each(['UsageRecordWriteFailed', 'RateLimitCounterFailed'])('fire on the %s metric the functions emit', (name) => {
    const found = findAlarms((metric) => metric.MetricName === name);
    expect(found).toHaveLength(1);
    expect(found[0]?.Properties).toMatchObject({
      Namespace: 'BranchApi',
      Dimensions: [{ Name: 'service', Value: 'branch-api' }],
      Statistic: 'Sum',
      Threshold: 0,
    });
  });

  it('notify the SNS topic given, on alarm and on recovery', () => {
    const topic = 'arn:aws:sns:eu-west-1:123456789012:branch-api-alarms';
    const { template: withTopic } = buildStack({ alarmTopicArn: topic });
    const all = Object.values(resourcesOfType(withTopic, 'AWS::CloudWatch::Alarm'));
    expect(all).toHaveLength(Object.keys(alarms).length);
    for (const alarm of all) {
      expect(alarm.Properties).toMatchObject({ AlarmActions: [topic], OKActions: [topic] });
    }
  });
});

describe('outputs', () => {
  it('give the base URL ending in /api and the three table names', () => {
    expect(Object.keys(template.findOutputs('*')).sort()).toEqual([
      'ApiBaseUrl',
      'BranchDataTableName',
      'KeysTableName',
      'UsageTableName',
    ]);
    template.hasOutput('ApiBaseUrl', {
      Value: { 'Fn::Join': ['', [{ 'Fn::GetAtt': [logicalId(stack.api.httpApi), 'ApiEndpoint'] }, '/api']] },
    });
    template.hasOutput('KeysTableName', { Value: { Ref: logicalId(stack.tables.keys) } });
    template.hasOutput('UsageTableName', { Value: { Ref: logicalId(stack.tables.usage) } });
    template.hasOutput('BranchDataTableName', { Value: { Ref: logicalId(stack.tables.branchData) } });
  });
});
