/**
 * Template assertions on the synthesized stack (bundling skipped; see bundle.test.ts for the
 * real bundles). Expected values come from the shared route and table definitions, so the stack
 * is checked against the same source the local gateway and bootstrap use.
 */
import { Match } from 'aws-cdk-lib/assertions';
import { createTableInput, rateLimitsTable, tableDefinitions, type TableDefinition } from '../../shared/data/tables';
import { fallbackEntry, routeKey, routes, secretScanningRoute, type RouteId } from '../../shared/api/routes';
import { Stack } from 'aws-cdk-lib';
import { DataTables } from '../../lib/infra/data-tables';
import { ApiFunction, ENDPOINT_MEMORY_MB, ENDPOINT_TIMEOUT, FALLBACK_MEMORY_MB } from '../../lib/infra/api-function';
import { loadConfig } from '../../shared/lambda/config';
import { asArray, buildStack, logicalId, newApp, resourcesOfType } from './support';

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
      [...routes.map(routeKey), routeKey(secretScanningRoute), '$default'].sort(),
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

  it('logs the matched route key, never the path or query string a caller typed (a key pasted into a URL)', () => {
    const stage = Object.values(resourcesOfType(template, 'AWS::ApiGatewayV2::Stage'))[0];
    const format: Record<string, string> = JSON.parse(stage?.Properties.AccessLogSettings.Format);
    expect(format.routeKey).toBe('$context.routeKey');
    expect(Object.values(format).every((variable) => /^\$context\.[\w.]+$/.test(variable))).toBe(true);
    expect(Object.values(format).filter((variable) => /path|query|uri|url/i.test(variable))).toEqual([]);
  });

  it('has no CORS configuration', () => {
    template.hasResourceProperties('AWS::ApiGatewayV2::Api', {
      ProtocolType: 'HTTP',
      CorsConfiguration: Match.absent(),
    });
  });
});

describe('functions', () => {
  it('are nine: one per route, the fallback, the rollups aggregator, the secret scanning report, the daily key expiry run and the key actions finisher', () => {
    template.resourceCountIs('AWS::Lambda::Function', routes.length + 5);
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

  it('trace nothing and may not write traces with tracing off (-c tracing=false)', () => {
    const off = buildStack({ tracing: false }).template;
    for (const fn of Object.values(resourcesOfType(off, 'AWS::Lambda::Function')))
      expect(fn.Properties.TracingConfig).toBeUndefined();
    expect(JSON.stringify(resourcesOfType(off, 'AWS::IAM::Policy'))).not.toContain('xray:');
  });

  const environmentOf = (fn: ApiFunction): Record<string, unknown> =>
    resourcesOfType(template, 'AWS::Lambda::Function')[logicalId(fn.function)]?.Properties.Environment.Variables;
  const runtimeVariables = {
    POWERTOOLS_SERVICE_NAME: 'branch-api',
    POWERTOOLS_LOG_LEVEL: 'INFO',
    NODE_OPTIONS: '--enable-source-maps',
  };

  it.each(routes.map((route) => route.id))('%s has exactly the environment its code reads', (id) => {
    const variables = environmentOf(stack.functions[id]);
    expect(variables).toEqual({
      ...runtimeVariables,
      KEYS_TABLE: { Ref: logicalId(stack.tables.keys) },
      USAGE_TABLE: { Ref: logicalId(stack.tables.usage) },
      BRANCH_DATA_TABLE: { Ref: logicalId(stack.tables.branchData) },
      RATE_LIMITS_TABLE: { Ref: logicalId(stack.tables.rateLimits) },
      USAGE_RETENTION_DAYS: '90',
      DEFAULT_RATE_LIMIT: '50/s',
      // Key events: "rate limit reached" (lib/infra/key-events.ts).
      KEY_EVENT_BUS_NAME: { Ref: logicalId(stack.keyEvents.bus) },
    });
    const resolved = {
      ...variables,
      KEYS_TABLE: 'k',
      USAGE_TABLE: 'u',
      BRANCH_DATA_TABLE: 'b',
      RATE_LIMITS_TABLE: 'r',
      KEY_EVENT_BUS_NAME: 'bus',
      AWS_REGION: 'eu-west-1',
    };
    expect(loadConfig(resolved as Record<string, string>)).toMatchObject({
      tables: { keys: 'k', usage: 'u', branchData: 'b' },
      usageRetentionDays: 90,
    });
  });

  it('the fallback has exactly the environment its code reads: no table', () => {
    expect(environmentOf(stack.fallback)).toEqual(runtimeVariables);
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
  /** Point-in-time recovery and deletion protection on; kept when the stack goes or the table is replaced. */
  const expectKept = (table: object) =>
    expect(table).toMatchObject({
      Properties: {
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        DeletionProtectionEnabled: true,
      },
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
    });

  const tableOf = (definition: TableDefinition) => {
    const construct = {
      Keys: stack.tables.keys,
      Usage: stack.tables.usage,
      BranchData: stack.tables.branchData,
      UsageRollups: stack.tables.rollups,
      RateLimits: stack.tables.rateLimits,
      KeyActivity: stack.tables.activity,
    }[definition.id];
    return tables[logicalId(construct)]!;
  };
  const sortBy = <T>(items: T[] | undefined, key: (item: T) => string) =>
    [...(items ?? [])].sort((a, b) => key(a).localeCompare(key(b)));

  it('are those of the shared definitions, on demand, encrypted with the AWS managed key', () => {
    template.resourceCountIs('AWS::DynamoDB::Table', tableDefinitions.length);
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
    expectKept(keys);
  });

  it('usage: by branch write shard and timestamp, no index, with TTL; point-in-time recovery; retained and deletion-protected', () => {
    const usage = tableOf(tableDefinitions[1]);
    expect(usage.Properties.KeySchema).toEqual([
      { AttributeName: 'pk', KeyType: 'HASH' },
      { AttributeName: 'sk', KeyType: 'RANGE' },
    ]);
    expect(usage.Properties.GlobalSecondaryIndexes).toBeUndefined();
    expect(usage.Properties.TimeToLiveSpecification).toEqual({ AttributeName: 'expires_at_epoch', Enabled: true });
    expectKept(usage);
  });

  it('branch data: by branch and sort key; point-in-time recovery; retained and deletion-protected', () => {
    const branchData = tableOf(tableDefinitions[2]);
    expect(branchData.Properties.KeySchema).toEqual([
      { AttributeName: 'branch_id', KeyType: 'HASH' },
      { AttributeName: 'sk', KeyType: 'RANGE' },
    ]);
    expectKept(branchData);
  });

  it('rate limits: by pk only, no index, with TTL; deleted with the stack', () => {
    const rateLimits = tableOf(rateLimitsTable);
    expect(rateLimits.Properties.KeySchema).toEqual([{ AttributeName: 'pk', KeyType: 'HASH' }]);
    expect(rateLimits.Properties.GlobalSecondaryIndexes).toBeUndefined();
    expect(rateLimits.Properties.TimeToLiveSpecification).toEqual({ AttributeName: 'expires_at_epoch', Enabled: true });
    expect(rateLimits).toMatchObject({ DeletionPolicy: 'Delete', UpdateReplacePolicy: 'Delete' });
    expect(rateLimits.Properties.PointInTimeRecoverySpecification.PointInTimeRecoveryEnabled).toBe(false);
  });

  it('destroyData deletes every table with the stack and drops deletion protection, keeping point-in-time recovery', () => {
    const { template: throwaway } = buildStack({ destroyData: true });
    const all = Object.values(resourcesOfType(throwaway, 'AWS::DynamoDB::Table'));
    expect(all).toHaveLength(tableDefinitions.length);
    expect(new Set(all.map((table) => table.DeletionPolicy))).toEqual(new Set(['Delete']));
    expect(all.filter((table) => table.Properties.DeletionProtectionEnabled)).toEqual([]);
    // Recovery stays on every table that holds what could not be rebuilt (not the rate-limit counters).
    const recovering = all.filter(
      (table) => table.Properties.PointInTimeRecoverySpecification.PointInTimeRecoveryEnabled,
    );
    expect(recovering).toHaveLength(tableDefinitions.length - 1);
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

  const keys = logicalId(stack.tables.keys);
  const usage = logicalId(stack.tables.usage);
  const branchData = logicalId(stack.tables.branchData);
  const rateLimits = logicalId(stack.tables.rateLimits);
  const chain = [
    `Allow dynamodb:GetItem ${keys}.Arn`,
    `Allow dynamodb:PutItem ${usage}.Arn`,
    `Allow dynamodb:UpdateItem ${rateLimits}.Arn`,
    // "Rate limit reached" key events (test/cdk/secret-scanning.test.ts covers the bus grants).
    `Allow events:PutEvents ${logicalId(stack.keyEvents.bus)}.Arn`,
  ];
  const dataAccess: Record<RouteId, string[]> = {
    GetBranch: [`Allow dynamodb:GetItem ${branchData}.Arn`],
    ListMembers: [`Allow dynamodb:Query ${branchData}.Arn`],
    ListPaymentProviders: [`Allow dynamodb:Query ${branchData}.Arn/index/active-providers`],
    GetPaymentProvider: [`Allow dynamodb:GetItem ${branchData}.Arn`],
  };

  it.each(Object.entries(dataAccess))(
    '%s may GetItem its key, PutItem its usage record and make its one kind of branch-data read: nothing else',
    (id, data) => {
      const fn = stack.functions[id as RouteId];
      expect(permissionsOf(fn)).toEqual([...baseline(fn), ...chain, ...data].sort());
    },
  );

  it('every route is in the expected grants above', () => {
    expect(Object.keys(dataAccess).sort()).toEqual(routes.map((route) => route.id).sort());
  });

  it.each(Object.keys(functionsByName()))('%s: one statement per grant, each naming its resources', (name) => {
    const fn = functionsByName()[name]!;
    const statements = policies
      .filter((policy) => policy.Properties.Roles.some((role: any) => role.Ref === logicalId(fn.role)))
      .flatMap((policy) => policy.Properties.PolicyDocument.Statement);
    const perStatement = statements.map(
      (statement: any) => asArray(statement.Action).length * asArray(statement.Resource).length,
    );
    expect(perStatement.reduce((sum: number, count: number) => sum + count, 0)).toBe(permissionsOf(fn).length);
    for (const statement of statements) {
      expect(Object.keys(statement).sort()).toEqual(['Action', 'Effect', 'Resource']);
    }
  });

  it('the fallback function touches no table', () => {
    expect(permissionsOf(stack.fallback)).toEqual(baseline(stack.fallback).sort());
  });

  it('no role carries a managed policy; no wildcard action; no DynamoDB call but GetItem, Query, PutItem, the rollups UpdateItem, the stream reads and the report batch read', () => {
    for (const role of Object.values(resourcesOfType(template, 'AWS::IAM::Role'))) {
      expect(role.Properties.ManagedPolicyArns).toBeUndefined();
    }
    const actions = policies.flatMap((policy) =>
      policy.Properties.PolicyDocument.Statement.flatMap((statement: any) => asArray(statement.Action)),
    );
    expect(actions.filter((action: string) => action.includes('*'))).toEqual([]);
    // The daily key expiry run scans the keys table once a day; no request path scans.
    expect(permissionsOf(stack.keyEvents.expiry).filter((grant) => grant.includes('dynamodb:Scan'))).toEqual([
      `Allow dynamodb:Scan ${keys}.Arn`,
    ]);
    const requestPaths = policies.filter(
      (policy) => !policy.Properties.Roles.some((role: any) => role.Ref === logicalId(stack.keyEvents.expiry.role)),
    );
    const requestActions = requestPaths.flatMap((policy) =>
      policy.Properties.PolicyDocument.Statement.flatMap((statement: any) => asArray(statement.Action)),
    );
    expect([...new Set(requestActions.filter((action: string) => action.startsWith('dynamodb:')))].sort()).toEqual([
      'dynamodb:BatchGetItem',
      'dynamodb:DescribeStream',
      'dynamodb:GetItem',
      'dynamodb:GetRecords',
      'dynamodb:GetShardIterator',
      'dynamodb:ListStreams',
      'dynamodb:PutItem',
      'dynamodb:Query',
      'dynamodb:UpdateItem',
    ]);
    // A secret scanning report reads which of its tokens are keys in batches; nothing else does.
    const batchReaders = policies.filter((policy) =>
      policy.Properties.PolicyDocument.Statement.some((statement: any) =>
        asArray(statement.Action).includes('dynamodb:BatchGetItem'),
      ),
    );
    expect(batchReaders.flatMap((policy) => policy.Properties.Roles.map((role: any) => role.Ref))).toEqual([
      logicalId(stack.secretScanning.function.role),
    ]);
    const forbidden = [
      'dynamodb:Scan',
      'dynamodb:BatchWriteItem',
      'dynamodb:DeleteItem',
      'dynamodb:TransactWriteItems',
      'dynamodb:TransactGetItems',
      'dynamodb:PartiQLSelect',
      'dynamodb:DescribeTable',
    ];
    expect(requestActions.filter((action: string) => forbidden.includes(action))).toEqual([]);
    const effects = policies.flatMap((policy) => policy.Properties.PolicyDocument.Statement.map((s: any) => s.Effect));
    expect(new Set(effects)).toEqual(new Set(['Allow']));
  });

  it('writes only usage records, reads no usage record, and nothing reaches an index of keys or usage', () => {
    const grants = [...Object.values(stack.functions), stack.fallback].flatMap(permissionsOf);
    const onUsage = grants.filter((grant) => grant.includes(`${usage}.Arn`));
    expect([...new Set(onUsage)]).toEqual([`Allow dynamodb:PutItem ${usage}.Arn`]);
    expect(grants.filter((grant) => grant.includes('dynamodb:PutItem') && !grant.endsWith(`${usage}.Arn`))).toEqual([]);
    expect(grants.filter((grant) => /\/index\//.test(grant) && !grant.includes(branchData))).toEqual([]);
  });
});

describe('ApiFunction.bindTables', () => {
  const bind = (access: Parameters<ApiFunction['bindTables']>[2]) => () => {
    const scope = new Stack(newApp(), 'Bind');
    const tables = new DataTables(scope, 'Tables');
    new ApiFunction(scope, 'GetBranch', { entry: 'functions/get-branch.ts', reservedConcurrency: 1 }).bindTables(
      tables,
      90,
      access,
    );
  };

  it('refuses an index the table does not have', () => {
    expect(bind([{ table: 'branchData', actions: ['dynamodb:Query'], index: 'no-such-index' }])).toThrow(
      /the branchData table has no index "no-such-index"/,
    );
    expect(bind([{ table: 'usage', actions: ['dynamodb:Query'], index: 'active-providers' }])).toThrow(
      /the usage table has no index "active-providers"/,
    );
  });

  it('refuses a grant with no action', () => {
    expect(bind([{ table: 'keys', actions: [] }])).toThrow(/no action given on the keys table/);
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

  it('are the lean set, each failure cause once, and send nothing without a topic', () => {
    // API 5xx rate and p99; the three failure metrics; both stream pipelines' iterator age and
    // dead letters; the daily key expiry run's errors.
    expect(Object.keys(alarms)).toHaveLength(2 + 3 + 2 * 2 + 1);
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

  it('fire on the p99 latency of the api stage', () => {
    const [latency] = findAlarms((metric) => metric.MetricName === 'Latency');
    expect(latency?.Properties).toMatchObject({ Threshold: 1000, EvaluationPeriods: 2, ExtendedStatistic: 'p99' });
  });

  it('watch no function behind the API or a stream by itself, and the key expiry run for errors', () => {
    const lambdaMetrics = Object.values(alarms)
      .flatMap(metricsOf)
      .filter((metric) => metric.Namespace === 'AWS/Lambda');
    expect(lambdaMetrics.map((metric) => [metric.MetricName, metric.Dimensions[0].Value]).sort()).toEqual(
      [
        ['Errors', { Ref: logicalId(stack.keyEvents.expiry.function) }],
        ['IteratorAge', { Ref: logicalId(stack.usageAggregation.function.function) }],
        ['IteratorAge', { Ref: logicalId(stack.keyActionsStream.function.function) }],
      ].sort(),
    );
    expect(
      Object.values(alarms)
        .flatMap(metricsOf)
        .filter((m) => m.Namespace === 'AWS/DynamoDB'),
    ).toEqual([]);
  });

  it.each(['UsageRecordWriteFailed', 'RateLimitCounterFailed', 'RollupRecordsUnreadable'])(
    'fire on the %s metric the functions emit',
    (name) => {
      const found = findAlarms((metric) => metric.MetricName === name);
      expect(found).toHaveLength(1);
      expect(found[0]?.Properties).toMatchObject({
        Namespace: 'BranchApi',
        Dimensions: [{ Name: 'service', Value: 'branch-api' }],
        Statistic: 'Sum',
        Threshold: 0,
      });
    },
  );

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
  it('give the base URL ending in /api and the table names', () => {
    expect(Object.keys(template.findOutputs('*')).sort()).toEqual([
      'ActivityTableName',
      'ApiBaseUrl',
      'BranchDataTableName',
      'KeyEventBusName',
      'KeysTableName',
      'RateLimitsTableName',
      'RollupsTableName',
      'UsageTableName',
    ]);
    template.hasOutput('ActivityTableName', { Value: { Ref: logicalId(stack.tables.activity) } });
    template.hasOutput('RateLimitsTableName', { Value: { Ref: logicalId(stack.tables.rateLimits) } });
    template.hasOutput('RollupsTableName', { Value: { Ref: logicalId(stack.tables.rollups) } });
    template.hasOutput('ApiBaseUrl', {
      Value: { 'Fn::Join': ['', [{ 'Fn::GetAtt': [logicalId(stack.api.httpApi), 'ApiEndpoint'] }, '/api']] },
    });
    template.hasOutput('KeysTableName', { Value: { Ref: logicalId(stack.tables.keys) } });
    template.hasOutput('UsageTableName', { Value: { Ref: logicalId(stack.tables.usage) } });
    template.hasOutput('BranchDataTableName', { Value: { Ref: logicalId(stack.tables.branchData) } });
  });
});
