/**
 * Stack settings from CDK context (`cdk deploy -c stage=dev -c destroyData=true`, or cdk.json).
 * Values given with `-c` arrive as strings; anything unparseable fails with the option's name.
 */
import type { Node } from 'constructs';
import { InvalidStackPropsError, type BranchApiStackProps, type PowertoolsLogLevel } from './branch-api-stack';

/** The context options this app reads; docs/deploy.md lists them for operators. */
export const CONTEXT_KEYS = [
  'stage',
  'destroyData',
  'throttleRate',
  'throttleBurst',
  'logRetentionDays',
  'usageRetentionDays',
  'rollupRetentionDays',
  'defaultRateLimit',
  'logLevel',
  'alarmTopicArn',
  'alarmEmail',
  'serverErrorRatePercent',
  'reservedConcurrencyEndpoint',
  'reservedConcurrencyFallback',
  'reservedConcurrencyAggregator',
  'reservedConcurrencySecretScanning',
  'reservedConcurrencyKeyExpiry',
] as const;

export interface AppSettings {
  /** Deployment name: the stack is `BranchApi-<stage>`. Not the API Gateway stage, always `api`. */
  readonly stage: string;
  readonly stackProps: BranchApiStackProps;
}

const invalid = (key: string, value: unknown, expected: string): never => {
  throw new InvalidStackPropsError(`Context option ${key} must be ${expected}, got ${JSON.stringify(value)}`);
};

const toNumber = (key: string, value: unknown): number => {
  const number = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  return typeof number === 'number' && Number.isFinite(number) ? number : invalid(key, value, 'a number');
};

const toBoolean = (key: string, value: unknown): boolean => {
  if (value === true || value === 'true') return true;
  if (value === false || value === 'false') return false;
  return invalid(key, value, 'true or false');
};

type Optional = <T>(key: (typeof CONTEXT_KEYS)[number], parse: (key: string, value: unknown) => T) => T | undefined;

/** `reservedConcurrency{Endpoint,Fallback,Aggregator,SecretScanning,KeyExpiry}`, each optional. */
const reservedConcurrencyOf = (optional: Optional) => {
  const entries = Object.entries({
    endpoint: optional('reservedConcurrencyEndpoint', toNumber),
    fallback: optional('reservedConcurrencyFallback', toNumber),
    aggregator: optional('reservedConcurrencyAggregator', toNumber),
    secretScanning: optional('reservedConcurrencySecretScanning', toNumber),
    keyExpiry: optional('reservedConcurrencyKeyExpiry', toNumber),
  }).filter(([, value]) => value !== undefined);
  return entries.length === 0 ? undefined : Object.fromEntries(entries);
};

/**
 * Account and region of the deploy environment (the CDK CLI sets CDK_DEFAULT_* from the
 * credentials and AWS_REGION/profile in use); without them (offline synth) the stack is
 * environment-agnostic. Never a pinned region.
 */
export const deployEnvironment = (env: Readonly<Record<string, string | undefined>>) => ({
  account: env.CDK_DEFAULT_ACCOUNT,
  region: env.CDK_DEFAULT_REGION,
});

export const readAppSettings = (node: Node): AppSettings => {
  const get = (key: (typeof CONTEXT_KEYS)[number]): unknown => node.tryGetContext(key);
  const stage = get('stage') ?? 'prod';
  if (typeof stage !== 'string' || !/^[a-z][a-z0-9-]{0,19}$/.test(stage)) {
    invalid('stage', stage, 'lower-case letters, digits and dashes, starting with a letter, at most 20 characters');
  }
  const optional = <T>(key: (typeof CONTEXT_KEYS)[number], parse: (key: string, value: unknown) => T) => {
    const value = get(key);
    return value === undefined ? undefined : parse(key, value);
  };
  const rateLimit = optional('throttleRate', toNumber);
  const burstLimit = optional('throttleBurst', toNumber);
  const props: Record<string, unknown> = {
    destroyData: optional('destroyData', toBoolean),
    throttle:
      rateLimit === undefined && burstLimit === undefined
        ? undefined
        : { ...(rateLimit === undefined ? {} : { rateLimit }), ...(burstLimit === undefined ? {} : { burstLimit }) },
    logRetention: optional('logRetentionDays', toNumber),
    usageRetentionDays: optional('usageRetentionDays', toNumber),
    rollupRetentionDays: optional('rollupRetentionDays', toNumber),
    defaultRateLimit: optional('defaultRateLimit', (_key, value) => String(value)),
    logLevel: optional('logLevel', (_key, value) => String(value).toUpperCase() as PowertoolsLogLevel),
    alarmTopicArn: optional('alarmTopicArn', (_key, value) => String(value)),
    alarmEmail: optional('alarmEmail', (_key, value) => String(value)),
    reservedConcurrency: reservedConcurrencyOf(optional),
    serverErrorRatePercent: optional('serverErrorRatePercent', toNumber),
  };
  return {
    stage: stage as string,
    stackProps: Object.fromEntries(Object.entries(props).filter(([, value]) => value !== undefined)),
  };
};
