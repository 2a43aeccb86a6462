/**
 * Stack props: defaults, overrides that reach the template, and values that can't make a working
 * stack rejected before anything is synthesized, with a message naming them (the app's `-c`
 * options: test/cdk/context.test.ts).
 */
import { Annotations, Match } from 'aws-cdk-lib/assertions';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { BranchApiStack, resolveStackSettings, type BranchApiStackProps } from '../../lib/infra/branch-api-stack';
import { contextOptionError, deployEnvironment, readAppSettings } from '../../lib/infra/context';
import { buildStack, newApp, resourcesOfType } from './support';

describe('stack props', () => {
  it('default to retained data, 1000/2000 throttling per route, 30-day logs, 90-day usage records, no reserved concurrency', () => {
    expect(resolveStackSettings()).toEqual({
      throttle: { rateLimit: 1000, burstLimit: 2000 },
      logRetention: RetentionDays.ONE_MONTH,
      destroyData: false,
      usageRetentionDays: 90,
      defaultRateLimit: '50/s',
      logLevel: 'INFO',
      tracing: true,
      serverErrorRatePercent: 5,
      reservedConcurrency: {},
      lambdaConcurrencyQuota: 1000,
    });
  });

  it('refuse reserved concurrency the stated quota cannot give, and a malformed alarm e-mail', () => {
    // Four endpoints at 300 is 1,200: more than the 900 a default quota leaves.
    expect(() => resolveStackSettings({ reservedConcurrency: { endpoint: 300 } })).toThrow(
      /reservedConcurrency adds up to 1200, more than the 900 a quota of 1000 leaves \(AWS keeps 100 unreserved\)/,
    );
    expect(() =>
      resolveStackSettings({ reservedConcurrency: { endpoint: 50, keyActions: 2 }, lambdaConcurrencyQuota: 300 }),
    ).toThrow(/adds up to 202, more than the 200 a quota of 300 leaves/);
    expect(resolveStackSettings({ reservedConcurrency: { endpoint: 50 }, lambdaConcurrencyQuota: 300 })).toEqual(
      expect.objectContaining({ reservedConcurrency: { endpoint: 50 }, lambdaConcurrencyQuota: 300 }),
    );
    expect(() => resolveStackSettings({ reservedConcurrency: { aggregator: 0 } })).toThrow(
      /reservedConcurrency.aggregator must be a positive integer, got 0/,
    );
    expect(() => resolveStackSettings({ lambdaConcurrencyQuota: 50 })).toThrow(
      /lambdaConcurrencyQuota must be an integer of at least 100, got 50/,
    );
    expect(() => resolveStackSettings({ alarmEmail: 'ops at example' })).toThrow(
      /alarmEmail must be an e-mail address/,
    );
  });

  it('reach the template when overridden', () => {
    const { template } = buildStack({
      throttle: { rateLimit: 20, burstLimit: 40 },
      logRetention: RetentionDays.ONE_WEEK,
      usageRetentionDays: 30,
      defaultRateLimit: '600/min',
      logLevel: 'DEBUG',
      serverErrorRatePercent: 2,
    });
    template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      DefaultRouteSettings: { ThrottlingRateLimit: 20, ThrottlingBurstLimit: 40 },
    });
    const logGroups = Object.values(resourcesOfType(template, 'AWS::Logs::LogGroup'));
    // Nine functions' (with the rollups aggregator, the secret scanning report, the key expiry run and the key
    // actions finisher) and the API's.
    expect(logGroups).toHaveLength(10);
    expect(new Set(logGroups.map((group) => group.Properties.RetentionInDays))).toEqual(new Set([7]));
    const functions = Object.values(resourcesOfType(template, 'AWS::Lambda::Function'));
    expect(functions.every((fn) => fn.Properties.Environment.Variables.POWERTOOLS_LOG_LEVEL === 'DEBUG')).toBe(true);
    // The four routes' functions and the secret scanning report (its chain configuration reads them).
    expect(functions.filter((fn) => fn.Properties.Environment.Variables.USAGE_RETENTION_DAYS === '30')).toHaveLength(5);
    expect(functions.filter((fn) => fn.Properties.Environment.Variables.DEFAULT_RATE_LIMIT === '600/min')).toHaveLength(
      5,
    );
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { Threshold: 2, EvaluationPeriods: 2 });
  });

  it.each<[string, BranchApiStackProps, RegExp]>([
    ['zero rate', { throttle: { rateLimit: 0 } }, /throttle\.rateLimit must be a positive integer.*got 0/],
    [
      'fractional burst',
      { throttle: { burstLimit: 2.5 } },
      /throttle\.burstLimit must be a positive integer.*got 2\.5/,
    ],
    ['NaN rate', { throttle: { rateLimit: Number.NaN } }, /throttle\.rateLimit must be a positive integer/],
    [
      'unknown retention',
      { logRetention: 31 as RetentionDays },
      /logRetention must be a finite CloudWatch Logs retention.*got 31/,
    ],
    ['infinite retention', { logRetention: RetentionDays.INFINITE }, /logRetention must be a finite/],
    ['zero usage days', { usageRetentionDays: 0 }, /usageRetentionDays must be a positive integer, got 0/],
    [
      'zero rate limit',
      { defaultRateLimit: '0/s' },
      /defaultRateLimit: Rate limit must allow at least 1 call.*got "0\/s"/,
    ],
    [
      'rate limit in days',
      { defaultRateLimit: '5/d' },
      /defaultRateLimit: Rate limit must be a whole number.*got "5\/d"/,
    ],
    ['huge rate limit', { defaultRateLimit: '2000000/s' }, /defaultRateLimit: Rate limit must allow at most 1000000/],
    ['fractional usage days', { usageRetentionDays: 1.5 }, /usageRetentionDays must be a positive integer, got 1\.5/],
    ['unknown log level', { logLevel: 'LOUD' as never }, /logLevel must be one of TRACE, DEBUG, INFO.*got "LOUD"/],
    ['5xx rate of 100', { serverErrorRatePercent: 100 }, /serverErrorRatePercent must be between 0 and 100/],
    [
      'not an SNS ARN',
      { alarmTopicArn: 'arn:aws:sqs:eu-west-1:123456789012:q' },
      /alarmTopicArn must be an SNS topic ARN/,
    ],
  ])('reject %s with a clear error', (_name, props, message) => {
    expect(() => new BranchApiStack(newApp(), 'Invalid', props)).toThrow(message);
    expect(() => resolveStackSettings(props)).toThrow(/^BranchApiStack: /);
  });
});

describe('alarm notifications', () => {
  const NO_TOPIC = /NO ALARM TOPIC: the alarms of this stack notify nobody/;

  it('warn loudly at synth when no topic or e-mail is given', () => {
    const { stack } = buildStack();
    Annotations.fromStack(stack).hasWarning('*', Match.stringLikeRegexp(NO_TOPIC.source));
  });

  it('go to a topic with the e-mail subscribed, alarm and recovery alike, and then nothing warns', () => {
    const { stack, template } = buildStack({ alarmEmail: 'ops@example.com' });
    expect(Annotations.fromStack(stack).findWarning('*', Match.stringLikeRegexp(NO_TOPIC.source))).toEqual([]);
    template.hasResourceProperties('AWS::SNS::Subscription', { Protocol: 'email', Endpoint: 'ops@example.com' });
    const topic = Object.keys(template.findResources('AWS::SNS::Topic'))[0]!;
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm'));
    expect(alarms).toHaveLength(10);
    for (const alarm of alarms) {
      expect(alarm.Properties.AlarmActions).toEqual([{ Ref: topic }]);
      expect(alarm.Properties.OKActions).toEqual([{ Ref: topic }]);
    }
  });

  it('go to the deployer\u2019s topic when given one', () => {
    const arn = 'arn:aws:sns:eu-west-1:111111111111:ops';
    const { stack, template } = buildStack({ alarmTopicArn: arn });
    expect(Annotations.fromStack(stack).findWarning('*', Match.stringLikeRegexp(NO_TOPIC.source))).toEqual([]);
    for (const alarm of Object.values(template.findResources('AWS::CloudWatch::Alarm'))) {
      expect(alarm.Properties.AlarmActions).toEqual([arn]);
    }
  });
});

describe('reserved concurrency', () => {
  const reservations = (props: BranchApiStackProps = {}) =>
    Object.entries(buildStack(props).template.findResources('AWS::Lambda::Function')).map(([id, fn]) => [
      id.replace(/[0-9A-F]{8}$/, ''),
      fn.Properties.ReservedConcurrentExecutions,
      fn.Metadata?.BranchApi?.reservedConcurrency,
    ]);

  it('is none by default: the template fits any account', () => {
    const found = reservations();
    expect(found).toHaveLength(9);
    expect(found.every(([, reserved]) => reserved === undefined)).toBe(true);
    expect(found).toContainEqual([
      'KeyActionsStreamFinisherFunction',
      undefined,
      { option: 'reservedConcurrencyKeyActions' },
    ]);
  });

  it('reserves for each kind what its option asks, the key actions finisher too, and records what was asked', () => {
    const found = reservations({ reservedConcurrency: { endpoint: 40, keyActions: 3, keyExpiry: 1 } });
    expect(found.filter(([, reserved]) => reserved === 40)).toHaveLength(4);
    expect(found).toContainEqual([
      'KeyActionsStreamFinisherFunction',
      3,
      { option: 'reservedConcurrencyKeyActions', asked: 3 },
    ]);
    expect(found).toContainEqual(['KeyEventsExpiryFunction', 1, { option: 'reservedConcurrencyKeyExpiry', asked: 1 }]);
    expect(found).toContainEqual(['FallbackFunction', undefined, { option: 'reservedConcurrencyFallback' }]);
  });
});

describe('reserved concurrency asked with -c', () => {
  const settingsFrom = (context: Record<string, unknown>) => readAppSettings(newApp({ context }).node);

  it('reads every kind, the key actions finisher too, and the quota', () => {
    expect(
      settingsFrom({ stage: 'dev', reservedConcurrencyKeyActions: '3', lambdaConcurrencyQuota: '500' }).stackProps,
    ).toEqual({ reservedConcurrency: { keyActions: 3 }, lambdaConcurrencyQuota: 500 });
  });

  it('refuses more than the stated quota leaves, naming the -c options', () => {
    const app = newApp({ context: { stage: 'dev', reservedConcurrencyEndpoint: '300' } });
    const { stackProps } = readAppSettings(app.node);
    let refused: Error | undefined;
    try {
      new BranchApiStack(app, 'Refused', stackProps);
    } catch (error) {
      refused = contextOptionError(error, app.node);
    }
    expect(refused?.message).toMatch(
      /^-c reservedConcurrencyEndpoint=300: adds up to 1200, more than the 900 a quota of 1000 leaves/,
    );
  });
});

describe('the stack\u2019s intent in its template metadata, which its nag rules read', () => {
  it('says when alarms have a topic and which quota the deployer stated; nothing by default', () => {
    expect(buildStack({ alarmEmail: 'ops@example.com' }).template.toJSON().Metadata).toEqual({
      BranchApi: { alarmTopic: true },
    });
    expect(buildStack({ lambdaConcurrencyQuota: 3000 }).template.toJSON().Metadata).toEqual({
      BranchApi: { lambdaConcurrencyQuota: 3000 },
    });
    expect(buildStack({ destroyData: true }).template.toJSON().Metadata).toBeUndefined();
  });
});

describe('the deploy environment', () => {
  it('gives the region and account of the credentials in use, and none offline', () => {
    expect(deployEnvironment({ CDK_DEFAULT_REGION: 'eu-west-3', CDK_DEFAULT_ACCOUNT: '111111111111' })).toEqual({
      region: 'eu-west-3',
      account: '111111111111',
    });
    expect(deployEnvironment({})).toEqual({ region: undefined, account: undefined });
  });

  it('leaves no region in the template: every ARN and URL takes the deployed one', () => {
    const text = JSON.stringify(buildStack().template.toJSON());
    expect(text).not.toMatch(/\b(us|eu|ap|sa|ca|me|af|il|mx)-(east|west|north|south|central|northeast|southeast)-\d\b/);
  });
});
