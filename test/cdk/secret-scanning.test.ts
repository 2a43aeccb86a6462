/**
 * The synthesized template of leaked keys and key events (lib/infra/secret-scanning.ts,
 * lib/infra/key-events.ts): the report's route and function with least privilege, the bus, who may
 * put events on it, and the daily "Key Expiring" schedule.
 */
import { Match, type Template } from 'aws-cdk-lib/assertions';
import { SECRET_SCANNING_TIMEOUT } from '../../lib/infra/secret-scanning';
import { routeKey, secretScanningRoute, timeoutSecondsOf } from '../../shared/api/routes';
import { buildContext } from '../../lib/local/events';
import { buildStack, logicalId, resourcesOfType, asArray } from './support';

const { stack, template } = buildStack();
const eventBus = logicalId(stack.keyEvents.bus);

/** Every statement of the policies attached to a function's role, flattened to `action resource`. */
const grantsOf = (t: Template, roleLogicalId: string): string[] =>
  Object.values(resourcesOfType(t, 'AWS::IAM::Policy'))
    .filter((policy) => asArray(policy.Properties.Roles).some((role: any) => role.Ref === roleLogicalId))
    .flatMap((policy) => asArray(policy.Properties.PolicyDocument.Statement))
    .flatMap((statement: any) =>
      asArray(statement.Action).flatMap((action: string) =>
        asArray(statement.Resource).map((resource: unknown) => `${action} ${JSON.stringify(resource)}`),
      ),
    );

const keysTableArn = JSON.stringify({ 'Fn::GetAtt': [logicalId(stack.tables.keys), 'Arn'] });
const busArn = JSON.stringify({ 'Fn::GetAtt': [eventBus, 'Arn'] });

describe('the secret scanning report', () => {
  const fn = stack.secretScanning.function;

  it('is POST /security/secret-scanning on the same HTTP API, served by its own function', () => {
    template.hasResourceProperties('AWS::ApiGatewayV2::Route', {
      ApiId: { Ref: logicalId(stack.api.httpApi) },
      RouteKey: `POST ${secretScanningRoute.path}`,
      Target: Match.anyValue(),
    });
    template.hasResourceProperties('AWS::Lambda::Permission', {
      FunctionName: { 'Fn::GetAtt': [logicalId(fn.function), 'Arn'] },
      Principal: 'apigateway.amazonaws.com',
    });
  });

  it('may read and revoke keys, record the leak, put key events and write its logs, and nothing else', () => {
    const grants = grantsOf(template, logicalId(fn.role)).filter((grant) => !grant.startsWith('xray:'));
    expect(grants.sort()).toEqual(
      [
        `dynamodb:BatchGetItem ${keysTableArn}`,
        `dynamodb:GetItem ${keysTableArn}`,
        `dynamodb:UpdateItem ${keysTableArn}`,
        `dynamodb:PutItem ${JSON.stringify({ 'Fn::GetAtt': [logicalId(stack.tables.activity), 'Arn'] })}`,
        `events:PutEvents ${busArn}`,
        `logs:CreateLogStream ${JSON.stringify({ 'Fn::GetAtt': [logicalId(fn.logGroup), 'Arn'] })}`,
        `logs:PutLogEvents ${JSON.stringify({ 'Fn::GetAtt': [logicalId(fn.logGroup), 'Arn'] })}`,
      ].sort(),
    );
  });

  it('has room for a 1 MB report, and answers before API Gateway gives up at 30 s', () => {
    template.hasResourceProperties('AWS::Lambda::Function', {
      Role: { 'Fn::GetAtt': [logicalId(fn.role), 'Arn'] },
      Timeout: SECRET_SCANNING_TIMEOUT.toSeconds(),
    });
    expect(SECRET_SCANNING_TIMEOUT.toSeconds()).toBeLessThan(30);
  });

  it('has the timeout the local run counts down from: one source, the route', () => {
    const context = buildContext(undefined, timeoutSecondsOf(routeKey(secretScanningRoute)));
    const remaining = context.getRemainingTimeInMillis();
    expect(remaining).toBeLessThanOrEqual(SECRET_SCANNING_TIMEOUT.toMilliseconds());
    // Only the instants between building the context and reading it have gone by.
    expect(remaining).toBeGreaterThan(SECRET_SCANNING_TIMEOUT.toMilliseconds() - 1000);
    expect(SECRET_SCANNING_TIMEOUT.toSeconds()).toBe(secretScanningRoute.timeoutSeconds);
  });

  it('reads the public keys from GitHub and names the bus', () => {
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: {
        Variables: Match.objectLike({
          SECRET_SCANNING_KEYS_URL: 'https://api.github.com/meta/public_keys/secret_scanning',
          KEY_EVENT_BUS_NAME: { Ref: eventBus },
          ACTIVITY_TABLE: { Ref: logicalId(stack.tables.activity) },
        }),
      },
      Role: { 'Fn::GetAtt': [logicalId(fn.role), 'Arn'] },
    });
  });
});

describe('the key events bus', () => {
  it('is one custom bus, named in a stack output for the operator tooling (KEY_EVENT_BUS_NAME)', () => {
    expect(Object.keys(resourcesOfType(template, 'AWS::Events::EventBus'))).toEqual([eventBus]);
    template.hasOutput('KeyEventBusName', { Value: { Ref: eventBus } });
  });

  it('takes events only from the functions that emit: the API functions, the report, the daily run and the key actions finisher', () => {
    const emitters = Object.values(resourcesOfType(template, 'AWS::IAM::Policy'))
      .filter((policy) =>
        asArray(policy.Properties.PolicyDocument.Statement).some((statement: any) =>
          asArray(statement.Action).includes('events:PutEvents'),
        ),
      )
      .flatMap((policy) => asArray(policy.Properties.Roles).map((role: any) => role.Ref as string));
    const expected = [
      ...Object.values(stack.functions).map((fn) => logicalId(fn.role)),
      logicalId(stack.secretScanning.function.role),
      logicalId(stack.keyEvents.expiry.role),
      logicalId(stack.keyActionsStream.function.role),
    ];
    expect(emitters.sort()).toEqual(expected.sort());
    expect(emitters).not.toContain(logicalId(stack.fallback.role));
    expect(emitters).not.toContain(logicalId(stack.usageAggregation.function.role));
    // Every PutEvents grant names the bus, never `*`.
    for (const role of emitters) {
      expect(grantsOf(template, role).filter((grant) => grant.startsWith('events:'))).toEqual([
        `events:PutEvents ${busArn}`,
      ]);
    }
  });
});

describe('the daily Key Expiring run', () => {
  const fn = stack.keyEvents.expiry;

  it('runs once a day from a schedule rule', () => {
    template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'cron(0 6 * * ? *)',
      State: 'ENABLED',
      Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [logicalId(fn.function), 'Arn'] } })],
    });
  });

  it('may scan and mark keys, find one by id, and put events: nothing else', () => {
    const grants = grantsOf(template, logicalId(fn.role)).filter(
      (grant) => !grant.startsWith('xray:') && !grant.startsWith('logs:'),
    );
    const byIdIndex = JSON.stringify({
      'Fn::Join': ['', [{ 'Fn::GetAtt': [logicalId(stack.tables.keys), 'Arn'] }, '/index/by-key-id']],
    });
    expect(grants.sort()).toEqual(
      [
        `dynamodb:Scan ${keysTableArn}`,
        `dynamodb:UpdateItem ${keysTableArn}`,
        `dynamodb:Query ${byIdIndex}`,
        `events:PutEvents ${busArn}`,
      ].sort(),
    );
  });
});
