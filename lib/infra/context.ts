/**
 * Stack settings from CDK context (`cdk deploy -c stage=prod -c logLevel=DEBUG`, or cdk.json).
 * Each option is one entry of CONTEXT_OPTIONS: what its text must be, and the stack prop it sets,
 * whose own rule (lib/infra/branch-api-stack.ts) is reported under the option's name.
 */
import type { StackProps } from 'aws-cdk-lib';
import type { Node } from 'constructs';
import leven from 'leven';
import { z } from 'zod';
import type { BranchApiStackProps } from './branch-api-stack';

type OwnProps = Omit<BranchApiStackProps, keyof StackProps>;
/** A stack prop, or one field of an object prop (`throttle.rateLimit`). */
type PropPath = {
  [K in keyof OwnProps & string]-?: NonNullable<OwnProps[K]> extends object
    ? `${K}.${keyof NonNullable<OwnProps[K]> & string}`
    : K;
}[keyof OwnProps & string];

interface ContextOption {
  /** What the value must be, for the message that refuses it. */
  readonly rule: string;
  /** `-c` gives text; cdk.json may give JSON values. */
  readonly schema: z.ZodType;
  /** The stack prop it sets; none for the stack's name and the synth's own switches. */
  readonly prop?: PropPath;
}

const NUMBER = {
  rule: 'a number',
  schema: z.union([z.number(), z.string().trim().min(1).transform(Number)]).pipe(z.number()),
};
const BOOLEAN = {
  rule: 'true or false',
  schema: z.union([z.boolean(), z.enum(['true', 'false']).transform((value) => value === 'true')]),
};
const TEXT = { rule: 'text', schema: z.string() };

/** The deployment's name, required (docs/decisions.md "Deploy options"): the stack is `BranchApi-<stage>`. */
const STAGE = {
  rule: 'lower-case letters, digits and dashes, starting with a letter, at most 20 characters',
  schema: z.string().regex(/^[a-z][a-z0-9-]{0,19}$/),
};

/** Every option this app reads; docs/deploy.md lists them for operators. */
export const CONTEXT_OPTIONS = {
  stage: STAGE,
  destroyData: { ...BOOLEAN, prop: 'destroyData' },
  throttleRate: { ...NUMBER, prop: 'throttle.rateLimit' },
  throttleBurst: { ...NUMBER, prop: 'throttle.burstLimit' },
  logRetentionDays: { ...NUMBER, prop: 'logRetention' },
  usageRetentionDays: { ...NUMBER, prop: 'usageRetentionDays' },
  rollupRetentionDays: { ...NUMBER, prop: 'rollupRetentionDays' },
  defaultRateLimit: { ...TEXT, prop: 'defaultRateLimit' },
  logLevel: { ...TEXT, schema: z.string().toUpperCase(), prop: 'logLevel' },
  tracing: { ...BOOLEAN, prop: 'tracing' },
  alarmTopicArn: { ...TEXT, prop: 'alarmTopicArn' },
  alarmEmail: { ...TEXT, prop: 'alarmEmail' },
  serverErrorRatePercent: { ...NUMBER, prop: 'serverErrorRatePercent' },
  reservedConcurrencyEndpoint: { ...NUMBER, prop: 'reservedConcurrency.endpoint' },
  reservedConcurrencyFallback: { ...NUMBER, prop: 'reservedConcurrency.fallback' },
  reservedConcurrencyAggregator: { ...NUMBER, prop: 'reservedConcurrency.aggregator' },
  reservedConcurrencySecretScanning: { ...NUMBER, prop: 'reservedConcurrency.secretScanning' },
  reservedConcurrencyKeyExpiry: { ...NUMBER, prop: 'reservedConcurrency.keyExpiry' },
  reservedConcurrencyKeyActions: { ...NUMBER, prop: 'reservedConcurrency.keyActions' },
  lambdaConcurrencyQuota: { ...NUMBER, prop: 'lambdaConcurrencyQuota' },
  /** Read by lib/infra/api-function.ts (`BUNDLING_LOGS_CONTEXT`). */
  bundlingLogs: BOOLEAN,
} as const satisfies Record<string, ContextOption>;

export type ContextKey = keyof typeof CONTEXT_OPTIONS;
export const CONTEXT_KEYS = Object.keys(CONTEXT_OPTIONS) as ContextKey[];

/** A `-c` option the app refuses: one line per problem, each naming the option. */
export class ContextOptionError extends Error {
  override name = 'ContextOptionError';
}

export interface AppSettings {
  /** Deployment name: the stack is `BranchApi-<stage>`. Not the API Gateway stage, always `api`. */
  readonly stage: string;
  readonly stackProps: BranchApiStackProps;
}

const closest = (key: string): ContextKey =>
  CONTEXT_KEYS.reduce((best, known) =>
    leven(key.toLowerCase(), known.toLowerCase()) < leven(key.toLowerCase(), best.toLowerCase()) ? known : best,
  );

/**
 * Whether an operator could have meant `key` as one of these options. CDK's own keys are left to
 * CDK: feature flags (`@aws-cdk/…`), its settings and cached lookups (`aws:cdk:…`, `…:account=…`),
 * and its kebab-case switches (`cli-telemetry`, `acknowledged-issue-numbers`) unless close to ours.
 */
const couldBeOurs = (key: string): boolean =>
  !/[:@]/.test(key) &&
  (!key.includes('-') || leven(key.replaceAll('-', '').toLowerCase(), closest(key).toLowerCase()) <= 2);

/** `-c key=value` as typed; a value that isn't plain printable text is shown as JSON. */
const given = (key: string, value: unknown) =>
  `-c ${key}=${typeof value === 'string' && /^[\x20-\x7e]*$/.test(value) ? value : (JSON.stringify(value) ?? String(value))}`;

/** Sets `throttle.rateLimit` in `props` as `{ throttle: { rateLimit } }`. */
const setProp = (props: Record<string, unknown>, path: string, value: unknown) => {
  const [head, field] = path.split('.') as [string, string | undefined];
  props[head] = field === undefined ? value : { ...(props[head] as object | undefined), [field]: value };
};

/**
 * The stage and the stack props the context asks for. Every problem is reported at once, one line
 * each: an unknown option (with the closest known one), a missing stage, a value that does not parse.
 * @throws ContextOptionError
 */
export const readAppSettings = (node: Node): AppSettings => {
  const context = node.getAllContext() as Record<string, unknown>;
  const problems = Object.keys(context)
    .filter((key) => !Object.hasOwn(CONTEXT_OPTIONS, key) && couldBeOurs(key))
    .map(
      (key) =>
        `unknown context option ${given(key, context[key])}; did you mean ${closest(key)}? ` +
        `The options are: ${CONTEXT_KEYS.join(', ')} (docs/deploy.md "Deploy")`,
    );
  const props: Record<string, unknown> = {};
  for (const key of CONTEXT_KEYS) {
    const value = context[key];
    if (value === undefined) continue;
    const option: ContextOption = CONTEXT_OPTIONS[key];
    const parsed = option.schema.safeParse(value);
    if (!parsed.success) problems.push(`${given(key, value)}: must be ${option.rule}`);
    else if (option.prop) setProp(props, option.prop, parsed.data);
  }
  if (context.stage === undefined) {
    problems.push(
      '-c stage=<name> is required: the stack is BranchApi-<name> (-c stage=prod, -c stage=dev); ' +
        'nothing is synthesized or deployed without naming it',
    );
  }
  if (problems.length > 0) throw new ContextOptionError(problems.join('\n'));
  return { stage: context.stage as string, stackProps: props };
};

/**
 * A stack props error (`BranchApiStack: reservedConcurrency.endpoint must be …`) said of the `-c`
 * options that set that prop, or undefined when no option given sets it.
 */
export const contextOptionError = (error: unknown, node: Node): ContextOptionError | undefined => {
  if (error instanceof ContextOptionError) return error;
  // The constructs' props errors (InvalidStackPropsError, …) say `<Construct>: <prop> <rule>`.
  const said =
    error instanceof Error && error.name.endsWith('PropsError')
      ? /^\w+: (?<prop>[\w.]+)(?<rule>.*)$/s.exec(error.message)?.groups
      : undefined;
  if (!said?.prop) return undefined;
  const options = CONTEXT_KEYS.filter((key) => {
    const prop: string | undefined = (CONTEXT_OPTIONS[key] as ContextOption).prop;
    return node.tryGetContext(key) !== undefined && (prop === said.prop || prop?.startsWith(`${said.prop}.`));
  });
  if (options.length === 0) return undefined;
  return new ContextOptionError(
    `${options.map((key) => given(key, node.tryGetContext(key))).join(' ')}: ${said.rule!.replace(/^:?\s*/, '')}`,
  );
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
