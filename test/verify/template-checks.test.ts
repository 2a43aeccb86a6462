/**
 * The template's checks (the stack's nag pack through CfnInclude, then the assembly's own) on a
 * real synthesized, bundled assembly: the project as it is has no defect, and each kind of deploy
 * defect seeded into a copy of its template is reported by a line naming the rule and the resource
 * (docs/deploy.md lists the kinds). The template is synthesized once; each kind mutates a copy.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CfnStage } from 'aws-cdk-lib/aws-apigatewayv2';
import { BranchApiStack } from '../../lib/infra/branch-api-stack';
import { rule } from '../../lib/infra/nag/rule';
import { assemblyOf } from '../../lib/verify/assembly';
import { checkTemplate, nagTemplate, renderChecks } from '../../lib/verify/template-checks';
import { OPERATOR_OUTPUTS } from '../../lib/operator/target';
import { buildStack, newApp } from '../cdk/support';

type Resources = Record<string, { Type: string; Properties: any; DeletionPolicy?: string; Metadata?: any }>;
interface Template {
  Resources: Resources;
  Metadata?: unknown;
}

const STACK = 'Checks';
let root: string;
let dir: string;
let template: Template;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'template-checks-test-'));
  dir = join(root, 'cdk.out');
  const app = newApp({ bundle: true, outdir: dir });
  new BranchApiStack(app, STACK);
  app.synth();
  template = JSON.parse(readFileSync(join(dir, `${STACK}.template.json`), 'utf8')) as Template;
}, 120_000);

afterAll(() => rmSync(root, { recursive: true, force: true }));

const check = (mutated: Template) => checkTemplate(assemblyOf(STACK, mutated, dir));

/** The logical id of the one resource of `type` whose id starts with `prefix`. */
const id = (resources: Resources, type: string, prefix = ''): string => {
  const found = Object.keys(resources).find((key) => key.startsWith(prefix) && resources[key]!.Type === type);
  if (!found) throw new Error(`No ${type} ${prefix}…`);
  return found;
};
const props = (r: Resources, type: string, prefix = '') => r[id(r, type, prefix)]!.Properties;
const FN = 'AWS::Lambda::Function';
const TABLE = 'AWS::DynamoDB::Table';
const MAPPING = 'AWS::Lambda::EventSourceMapping';
const ALARM = 'AWS::CloudWatch::Alarm';
const INTEGRATION = 'AWS::ApiGatewayV2::Integration';
const mapping = (r: Resources) => props(r, MAPPING);
const route = (r: Resources, key: string) =>
  Object.values(r).find((res) => res.Type === 'AWS::ApiGatewayV2::Route' && res.Properties.RouteKey === key)!;

/** [kind, mutation, check expected to report it, resource prefix (or '' for the stack), reason]. */
const KINDS: [string, (r: Resources, t: Template) => void, string, string, RegExp][] = [
  [
    'a renamed stage',
    (r) => (props(r, 'AWS::ApiGatewayV2::Stage').StageName = 'v1'),
    'stage-name',
    'ApiStage',
    /named "v1"/,
  ],
  [
    'auto-deploy off',
    (r) => (props(r, 'AWS::ApiGatewayV2::Stage').AutoDeploy = false),
    'stage-auto-deploy',
    'ApiStage',
    /AutoDeploy is off/,
  ],
  [
    'a documented route removed',
    (r) => delete r[Object.keys(r).find((k) => r[k] === route(r, 'GET /v1/members'))!],
    'routes-match-openapi',
    'ApiHttpApi',
    /GET \/v1\/members, but no route/,
  ],
  [
    'a route drifting from the OpenAPI document',
    (r) => (route(r, 'GET /v1/branch').Properties.RouteKey = 'GET /v1/branches'),
    'routes-match-openapi',
    'ApiHttpApi',
    /GET \/v1\/branches is not an operation/,
  ],
  [
    'the $default route removed',
    (r) => delete r[Object.keys(r).find((k) => r[k] === route(r, '$default'))!],
    'routes-match-openapi',
    'ApiHttpApi',
    /no \$default route/,
  ],
  [
    'payload format 1.0',
    (r) => (props(r, INTEGRATION, 'ApiHttpApiGETv1branch').PayloadFormatVersion = '1.0'),
    'route-integration',
    'ApiHttpApiGETv1branch',
    /payload format 1.0/,
  ],
  [
    'an integration timeout shorter than the function\u2019s',
    (r) => (props(r, INTEGRATION, 'ApiHttpApiGETv1members').TimeoutInMillis = 5000),
    'route-integration',
    'ApiHttpApiGETv1members',
    /times out after 5000 ms, before its function's 10000 ms/,
  ],
  [
    'an HTTP integration instead of a Lambda proxy',
    (r) => (props(r, INTEGRATION, 'ApiHttpApiGETv1branch').IntegrationType = 'HTTP_PROXY'),
    'route-integration',
    'ApiHttpApiGETv1branch',
    /HTTP_PROXY, expected AWS_PROXY/,
  ],
  [
    'an invoke permission for the wrong function',
    (r) =>
      (props(r, 'AWS::Lambda::Permission', 'ApiHttpApiGETv1branchGetBranchPermission').FunctionName = {
        'Fn::GetAtt': [id(r, FN, 'ListMembers'), 'Arn'],
      }),
    'invoke-permission',
    'ApiHttpApi',
    /invoke GetBranchFunction\w+ for GET \/v1\/branch/,
  ],
  [
    'an invoke permission for another path',
    (r) =>
      (props(r, 'AWS::Lambda::Permission', 'ApiHttpApiGETv1membersListMembersPermission').SourceArn['Fn::Join'][1][8] =
        '/*/*/v1/other'),
    'invoke-permission',
    'ApiHttpApi',
    /ListMembersFunction\w+ for GET \/v1\/members/,
  ],
  [
    'runtime nodejs16.x',
    (r) => (props(r, FN, 'GetBranch').Runtime = 'nodejs16.x'),
    'function-runtime',
    'GetBranchFunction',
    /nodejs16.x, expected nodejs24.x/,
  ],
  [
    'architecture x86_64',
    (r) => delete props(r, FN, 'ListMembers').Architectures,
    'function-architecture',
    'ListMembersFunction',
    /x86_64 \(the default\), expected arm64/,
  ],
  [
    '128 MB memory',
    (r) => (props(r, FN, 'GetPaymentProvider').MemorySize = 128),
    'function-memory',
    'GetPaymentProviderFunction',
    /memory 128 MB/,
  ],
  [
    'a reservation asked for that the template dropped',
    (r) => (r[id(r, FN, 'UsageAggregation')]!.Metadata.BranchApi.reservedConcurrency.asked = 5),
    'function-reserved-concurrency',
    'UsageAggregationAggregatorFunction',
    /reserves none, but -c reservedConcurrencyAggregator asked 5/,
  ],
  [
    'a reservation nobody asked for (the key actions finisher\u2019s fixed 2)',
    (r) => (props(r, FN, 'KeyActionsStream').ReservedConcurrentExecutions = 2),
    'function-reserved-concurrency',
    'KeyActionsStreamFinisherFunction',
    /reserves 2, but -c reservedConcurrencyKeyActions asked none/,
  ],
  [
    'more reserved concurrency than a default account leaves',
    (r) => {
      props(r, FN, 'Fallback').ReservedConcurrentExecutions = 950;
      r[id(r, FN, 'Fallback')]!.Metadata.BranchApi.reservedConcurrency.asked = 950;
    },
    'function-reserved-concurrency',
    'FallbackFunction',
    /the functions reserve 950, more than the 900 a quota of 1000 leaves/,
  ],
  [
    'more reserved concurrency than the stated quota leaves',
    (r, t) => {
      for (const [prefix, reserved] of [
        ['GetBranch', 60],
        ['ListMembers', 60],
      ] as const) {
        props(r, FN, prefix).ReservedConcurrentExecutions = reserved;
        r[id(r, FN, prefix)]!.Metadata.BranchApi.reservedConcurrency.asked = reserved;
      }
      t.Metadata = { BranchApi: { lambdaConcurrencyQuota: 200 } };
    },
    'function-reserved-concurrency',
    'ListMembersFunction',
    /the functions reserve 120, more than the 100 a quota of 200 leaves/,
  ],
  [
    'a handler naming a module the asset lacks',
    (r) => (props(r, FN, 'Fallback').Handler = 'main.handler'),
    'function-code',
    'FallbackFunction',
    /no module main/,
  ],
  [
    'a code asset missing from the assembly',
    (r) => (props(r, FN, 'GetBranch').Code.S3Key = 'feed.zip'),
    'function-code',
    'GetBranchFunction',
    /code asset is not in the assembly/,
  ],
  [
    'the metrics namespace set on one function, which the code ignores',
    (r) => (props(r, FN, 'ListMembers').Environment.Variables.POWERTOOLS_METRICS_NAMESPACE = 'Other'),
    'function-ignored-configuration',
    'ListMembersFunction',
    /POWERTOOLS_METRICS_NAMESPACE, but the code ignores it/,
  ],
  [
    'a function role from outside the stack',
    (r) => (props(r, FN, 'GetBranch').Role = 'arn:aws:iam::1:role/x'),
    'function-role',
    'GetBranchFunction',
    /not a role of the stack/,
  ],
  ['a disabled stream mapping', (r) => (mapping(r).Enabled = false), 'stream-enabled', 'UsageAggregation', /disabled/],
  [
    'a stream read from LATEST',
    (r) => (mapping(r).StartingPosition = 'LATEST'),
    'stream-starting-position',
    'UsageAggregation',
    /LATEST, expected TRIM_HORIZON/,
  ],
  [
    'a batching window past the lag target',
    (r) => (mapping(r).MaximumBatchingWindowInSeconds = 300),
    'stream-batching',
    'UsageAggregation',
    /batching window 300 s/,
  ],
  [
    'partial batch responses removed',
    (r) => delete mapping(r).FunctionResponseTypes,
    'stream-partial-batch',
    'UsageAggregation',
    /no ReportBatchItemFailures/,
  ],
  [
    'bisecting off',
    (r) => (mapping(r).BisectBatchOnFunctionError = false),
    'stream-bisect',
    'UsageAggregation',
    /Bisect/,
  ],
  [
    'unbounded retries',
    (r) => (mapping(r).MaximumRetryAttempts = -1),
    'stream-retries',
    'UsageAggregation',
    /retries -1/,
  ],
  [
    'unbounded record age',
    (r) => delete mapping(r).MaximumRecordAgeInSeconds,
    'stream-retries',
    'UsageAggregation',
    /record age "unbounded"/,
  ],
  [
    'the failure destination removed',
    (r) => delete mapping(r).DestinationConfig,
    'stream-failure-destination',
    'UsageAggregation',
    /no on-failure destination/,
  ],
  [
    'an unencrypted failure queue',
    (r) => delete props(r, 'AWS::SQS::Queue').SqsManagedSseEnabled,
    'stream-failure-queue',
    'UsageAggregation',
    /failure queue \w+ is not encrypted/,
  ],
  [
    'a failure queue keeping messages 4 days',
    (r) => delete props(r, 'AWS::SQS::Queue').MessageRetentionPeriod,
    'stream-failure-queue',
    'UsageAggregation',
    /keeps messages 345600 s, expected 1209600/,
  ],
  [
    'the event filter removed (TTL deletions invoke the aggregator)',
    (r) => delete mapping(r).FilterCriteria,
    'stream-filter',
    'UsageAggregation',
    /no readable filter/,
  ],
  [
    'a filter on the wrong event',
    (r) => (mapping(r).FilterCriteria.Filters[0].Pattern = '{"eventName":["REMOVE"]}'),
    'stream-filter',
    'UsageAggregation',
    /filter \{"eventName":\["REMOVE"\]\}, expected \{"eventName":\["INSERT"\]\}/,
  ],
  [
    'the key actions filter removed (every write of a key invokes the finisher)',
    (r) => delete props(r, MAPPING, 'KeyActionsStream').FilterCriteria,
    'stream-filter',
    'KeyActionsStream',
    /no readable filter: every record invokes the function, not only key items carrying a pending/,
  ],
  [
    'the key actions filter on the wrong attribute',
    (r) =>
      (props(r, MAPPING, 'KeyActionsStream').FilterCriteria.Filters[0].Pattern =
        '{"dynamodb":{"NewImage":{"revoked_at":{"S":[{"exists":true}]}}}}'),
    'stream-filter',
    'KeyActionsStream',
    /revoked_at.*, expected .*outbox/,
  ],
  [
    'the keys stream mapping deleted',
    (r) => delete r[id(r, MAPPING, 'KeyActionsStream')],
    'stream-consumed',
    'TablesKeys',
    /feeds no function/,
  ],
  [
    'the stream mapping deleted',
    (r) => delete r[id(r, MAPPING)],
    'stream-consumed',
    'TablesUsage',
    /feeds no function/,
  ],
  [
    'a changed key schema',
    (r) => (props(r, TABLE, 'TablesUsage').KeySchema[1].AttributeName = 'created_at'),
    'table-key-schema',
    'TablesUsage',
    /the code reads and writes pk \(S\) \+ sk \(S\)/,
  ],
  [
    'a removed index',
    (r) => props(r, TABLE, 'TablesKeys').GlobalSecondaryIndexes.splice(0, 1),
    'table-indexes',
    'TablesKeys',
    /no index by-branch/,
  ],
  [
    'an index projecting keys only',
    (r) => (props(r, TABLE, 'TablesBranchData').GlobalSecondaryIndexes[0].Projection.ProjectionType = 'KEYS_ONLY'),
    'table-indexes',
    'TablesBranchData',
    /projects KEYS_ONLY/,
  ],
  [
    'a renamed TTL attribute',
    (r) => (props(r, TABLE, 'TablesUsage').TimeToLiveSpecification.AttributeName = 'ttl'),
    'table-ttl',
    'TablesUsage',
    /TTL on ttl, the code writes expires_at_epoch/,
  ],
  [
    'point-in-time recovery off',
    (r) => (props(r, TABLE, 'TablesKeys').PointInTimeRecoverySpecification.PointInTimeRecoveryEnabled = false),
    'table-point-in-time-recovery',
    'TablesKeys',
    /point-in-time recovery is off/,
  ],
  [
    'a table deleted with the stack',
    (r) => (r[id(r, TABLE, 'TablesBranchData')]!.DeletionPolicy = 'Delete'),
    'table-retention',
    'TablesBranchData',
    /deleted with the stack, or not deletion-protected/,
  ],
  [
    'provisioned billing',
    (r) => delete props(r, TABLE, 'TablesUsageRollups').BillingMode,
    'table-billing',
    'TablesUsageRollups',
    /PROVISIONED/,
  ],
  [
    'the usage stream turned off',
    (r) => delete props(r, TABLE, 'TablesUsage').StreamSpecification,
    'table-stream',
    'TablesUsage',
    /stream off, expected NEW_IMAGE/,
  ],
  [
    'an alarm on the wrong function',
    (r) => (props(r, ALARM, 'MonitoringKeyExpiryErrors').Dimensions[0].Value = { Ref: id(r, FN, 'ListMembers') }),
    'alarm-coverage',
    'KeyEventsExpiryFunction',
    /no alarm watches AWS\/Lambda Errors of function KeyEventsExpiry\w+, which neither the API nor a stream watches/,
  ],
  [
    'a deleted alarm',
    (r) => delete r[id(r, ALARM, 'MonitoringApi5xxRate')],
    'alarm-coverage',
    'ApiHttpApi',
    /no alarm watches AWS\/ApiGateway 5xx/,
  ],
  [
    'a failure metric with no alarm',
    (r) => delete r[id(r, ALARM, 'MonitoringRateLimitCounterFailed')],
    'alarm-coverage',
    'ApiHttpApi',
    /no alarm watches BranchApi RateLimitCounterFailed of the service/,
  ],
  [
    'a stream consumer\u2019s dead letters unwatched',
    (r) => delete r[id(r, ALARM, 'KeyActionsStreamDeadLetters')],
    'alarm-coverage',
    'KeyActionsStreamDeadLetterQueue',
    /no alarm watches AWS\/SQS ApproximateNumberOfMessagesVisible of failure destination/,
  ],
  [
    'a stream consumer falling behind unwatched',
    (r) => delete r[id(r, ALARM, 'UsageAggregationIteratorAge')],
    'alarm-coverage',
    'UsageAggregationAggregatorFunction',
    /no alarm watches AWS\/Lambda IteratorAge of stream consumer/,
  ],
  [
    'an alarm on a resource outside the stack',
    (r) => (props(r, ALARM, 'MonitoringKeyExpiryErrors').Dimensions[0].Value = 'someone-elses-function'),
    'alarm-target',
    'MonitoringKeyExpiryErrors',
    /not a resource of the stack/,
  ],
  [
    'a rate alarm that can never fire',
    (r) => (props(r, ALARM, 'MonitoringApi5xxRate').Threshold = 100),
    'alarm-threshold',
    'MonitoringApi5xxRate',
    /a percentage above 100/,
  ],
  [
    'an alarm needing more datapoints than it evaluates',
    (r) => (props(r, ALARM, 'MonitoringApiLatencyP99').DatapointsToAlarm = 3),
    'alarm-threshold',
    'MonitoringApiLatencyP99',
    /3 breaching datapoints out of 2/,
  ],
  [
    'missing data treated as breaching',
    (r) => (props(r, ALARM, 'UsageAggregationIteratorAge').TreatMissingData = 'breaching'),
    'alarm-missing-data',
    'UsageAggregationIteratorAge',
    /breaching, expected notBreaching/,
  ],
  [
    'an AWS metric watched without the dimension AWS publishes it with',
    (r) => (props(r, ALARM, 'MonitoringKeyExpiryErrors').Dimensions = [{ Name: 'Function', Value: 'x' }]),
    'alarm-dimensions',
    'MonitoringKeyExpiryErrors',
    /AWS publishes it with dimensions \{FunctionName\}/,
  ],
  [
    'a log group that keeps its logs forever',
    (r) => delete props(r, 'AWS::Logs::LogGroup', 'GetBranchLogGroup').RetentionInDays,
    'log-retention',
    'GetBranchLogGroup',
    /no retention/,
  ],
  [
    'a function logging to a log group Lambda creates',
    (r) => delete props(r, FN, 'ListMembers').LoggingConfig,
    'function-log-group',
    'ListMembersFunction',
    /logs to no log group of the stack/,
  ],
  [
    'a key events grant dropped from a sender',
    (r) => {
      const document = props(r, 'AWS::IAM::Policy', 'GetBranchRoleDefaultPolicy').PolicyDocument;
      document.Statement = document.Statement.filter((s: { Action: unknown }) => s.Action !== 'events:PutEvents');
    },
    'key-events-grant',
    'GetBranchFunction',
    /sends key events to KeyEventsBus\w+ but its role may not events:PutEvents on it: no statement allows it/,
  ],
  [
    'a key events grant given to a function that sends none',
    (r) =>
      props(r, 'AWS::IAM::Policy', 'FallbackRoleDefaultPolicy').PolicyDocument.Statement.push({
        Effect: 'Allow',
        Action: 'events:PutEvents',
        Resource: { 'Fn::GetAtt': [id(r, 'AWS::Events::EventBus', 'KeyEventsBus'), 'Arn'] },
      }),
    'key-events-senders',
    'FallbackRole',
    /events:PutEvents is granted but no function with this role sends key events/,
  ],
  [
    'a stream consumer whose role cannot send to its dead-letter queue',
    (r) => {
      const document = props(r, 'AWS::IAM::Policy', 'UsageAggregationAggregatorRoleDefaultPolicy').PolicyDocument;
      document.Statement = document.Statement.filter(
        (s: { Action: unknown }) => !JSON.stringify(s.Action).includes('sqs:SendMessage'),
      );
    },
    'stream-permissions',
    'UsageAggregation',
    /its function's role may not sqs:SendMessage on UsageAggregationDeadLetterQueue\w+\.Arn: no statement allows it/,
  ],
  [
    'a stream consumer whose role cannot read its stream',
    (r) => {
      const document = props(r, 'AWS::IAM::Policy', 'KeyActionsStreamFinisherRoleDefaultPolicy').PolicyDocument;
      document.Statement = document.Statement.filter(
        (s: { Action: unknown }) => !JSON.stringify(s.Action).includes('GetRecords'),
      );
    },
    'stream-permissions',
    'KeyActionsStream',
    /its function's role may not dynamodb:GetRecords on TablesKeys\w+\.StreamArn: no statement allows it/,
  ],
  [
    'one alarm not wired to the deployer\u2019s topic',
    (r) =>
      Object.keys(r)
        .filter((k) => r[k]!.Type === ALARM && !k.startsWith('MonitoringKeyExpiryErrors'))
        .forEach((k) =>
          Object.assign(r[k]!.Properties, {
            AlarmActions: ['arn:aws:sns:eu-west-1:111111111111:ops'],
            OKActions: ['arn:aws:sns:eu-west-1:111111111111:ops'],
          }),
        ),
    'alarm-actions',
    'MonitoringKeyExpiryErrors',
    /does not notify/,
  ],
];

describe('the project as it is', () => {
  it('passes every check of the template', () => {
    expect(check(template)).toEqual([]);
  });

  it('holds at least 30 named checks, each listed in docs/deploy.md', () => {
    const names = [...renderChecks('', '').matchAll(/^- `([\w-]+)`/gm)].map((match) => match[1]);
    expect(new Set(names).size).toBe(names.length);
    expect(names.length).toBeGreaterThanOrEqual(30);
  });
});

describe('each seeded kind of defect is reported by a line naming its check', () => {
  it.each(KINDS)('%s', (_kind, mutate, checkName, resource, reason) => {
    const mutated = structuredClone(template);
    mutate(mutated.Resources, mutated);
    expect(check(mutated)).toEqual(
      expect.arrayContaining([
        {
          check: checkName,
          resource: resource === STACK ? STACK : expect.stringMatching(new RegExp(`^${resource}`)),
          reason: expect.stringMatching(reason),
        },
      ]),
    );
  });

  it('covers at least 30 kinds', () => {
    expect(KINDS.length).toBeGreaterThanOrEqual(30);
  });
});

describe('the outputs the operator tooling reads (the defect that shipped: no activity table output)', () => {
  type WithOutputs = Template & { Outputs: Record<string, { Value: unknown }> };

  it.each(OPERATOR_OUTPUTS.map(({ output, envVar }) => [output, envVar]))(
    'an output removed (%s) is a line naming it and its variable',
    (output, envVar) => {
      const mutated = structuredClone(template) as WithOutputs;
      delete mutated.Outputs[output];
      expect(check(mutated)).toEqual([
        {
          check: 'operator-outputs',
          resource: STACK,
          reason: `no stack output ${output}: the operator tooling (--stack) finds no value for ${envVar}`,
        },
      ]);
    },
  );

  it('a table output naming another table', () => {
    const mutated = structuredClone(template) as WithOutputs;
    mutated.Outputs.ActivityTableName!.Value = mutated.Outputs.KeysTableName!.Value;
    expect(check(mutated)).toEqual([
      expect.objectContaining({
        check: 'operator-outputs',
        reason: expect.stringMatching(/^stack output ActivityTableName does not name the activity table/),
      }),
    ]);
  });
});

describe('acknowledged findings, carried in the template with their reasons', () => {
  const nag = (json: unknown) => nagTemplate(assemblyOf(STACK, json as Template, ''));

  it('a throwaway stack (destroyData) may delete its tables with it', () => {
    const json = buildStack({ destroyData: true }).template.toJSON() as Template;
    const tables = Object.values(json.Resources).filter((r) => r.Type === TABLE);
    expect(tables.every((table) => table.DeletionPolicy === 'Delete')).toBe(true);
    expect(tables[0]!.Metadata.cdk_nag.rules_to_suppress).toContainEqual({
      id: 'BranchApi-table-retention',
      reason: expect.stringMatching(/^destroyData: a throwaway stage/),
    });
    expect(nag(json)).toEqual([]);
    for (const table of tables) delete table.Metadata.cdk_nag;
    expect(nag(json).filter((d) => d.check === 'table-retention')).toHaveLength(tables.length);
  });

  it('the rate-limit counters need neither recovery nor retention, and say why', () => {
    const mutated = structuredClone(template);
    delete mutated.Resources[id(mutated.Resources, TABLE, 'TablesRateLimits')]!.Metadata.cdk_nag;
    expect(check(mutated).map((d) => d.check)).toEqual(['table-point-in-time-recovery', 'table-retention']);
  });
});

describe('alarm notifications the deployer asked for', () => {
  it('are reported missing when the stack says a topic was given but no alarm notifies it', () => {
    const mutated = structuredClone(template);
    mutated.Metadata = { BranchApi: { alarmTopic: true } };
    const defects = check(mutated).filter((d) => d.check === 'alarm-actions');
    expect(defects.length).toBe(Object.values(template.Resources).filter((r) => r.Type === ALARM).length);
    expect(defects[0]!.reason).toBe('notifies nobody, though the deployer gave an alarm topic');
  });
});

describe('a malformed or surprising template', () => {
  it('is reported, never thrown: every resource without properties', () => {
    const mutated = structuredClone(template);
    for (const resource of Object.values(mutated.Resources)) resource.Properties = 'garbage';
    const defects = check(mutated);
    expect(defects).toContainEqual({
      check: 'template',
      resource: STACK,
      reason: expect.stringMatching(/^the stack's nag pack could not load this template: /),
    });
    expect(defects.every((d) => typeof d.check === 'string' && d.reason.length > 0)).toBe(true);
  });

  it('is reported, never thrown: a resource that is not an object', () => {
    const mutated = structuredClone(template) as unknown as { Resources: Record<string, unknown> };
    mutated.Resources.Odd = null;
    mutated.Resources.Odder = 42;
    expect(() => check(mutated as unknown as Template)).not.toThrow();
  });

  it('turns a rule that throws into a finding naming it', () => {
    const throwing = rule(CfnStage, 'always-throws', 'a rule with a bug', () => {
      throw new Error('boom');
    });
    expect(nagTemplate(assemblyOf(STACK, template, dir), [throwing])).toEqual([
      {
        check: 'always-throws',
        resource: expect.stringMatching(/^ApiStage/),
        reason: 'the rule could not read this resource: boom',
      },
    ]);
  });
});
