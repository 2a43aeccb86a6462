/**
 * What the operator tooling (CLI and console) reads from a deployed stack, and where it finds it.
 * Each entry is a stack output of that name (lib/infra/branch-api-stack.ts makes one per entry)
 * whose value the tooling reads from an environment variable. `--stack NAME` fills the variables
 * from CloudFormation's DescribeStacks, `--outputs FILE` from what `cdk deploy --outputs-file`
 * wrote (docs/deploy.md "Load a branch and create the first key").
 */
import { readFileSync } from 'node:fs';
import { ConfigError } from '../../shared/config/env';
import { OPERATOR_TABLES, operatorTableOutput, TABLE_ENV } from '../../shared/data/tables';

type Env = Record<string, string | undefined>;

export interface OperatorOutput {
  /** The stack output's name, e.g. `KeysTableName`. */
  readonly output: string;
  /** The environment variable the tooling reads it from, e.g. `KEYS_TABLE`. */
  readonly envVar: string;
  /** What it names, for the output's description and the messages. */
  readonly what: string;
}

/** The key events bus: the actions' events go there (shared/data/key-events.ts). */
export const KEY_EVENT_BUS_OUTPUT = {
  output: 'KeyEventBusName',
  envVar: 'KEY_EVENT_BUS_NAME',
  what: 'the key events bus (add event rules to it; the operator tooling puts its own events here)',
} as const satisfies OperatorOutput;

const TABLE_CONTENTS: Record<(typeof OPERATOR_TABLES)[number], string> = {
  keys: 'API keys',
  usage: 'usage records',
  branchData: 'branches, members and payment providers',
  rollups: 'hourly usage rollups',
  rateLimits: 'per-key rate-limit counters',
  activity: 'key activity (the audit log of key actions)',
};

/** Everything the tooling needs of a deployed stack: every table it names, and the key events bus. */
export const OPERATOR_OUTPUTS: readonly OperatorOutput[] = [
  ...OPERATOR_TABLES.map((name) => ({
    output: operatorTableOutput(name),
    envVar: TABLE_ENV[name],
    what: `the table of ${TABLE_CONTENTS[name]}`,
  })),
  KEY_EVENT_BUS_OUTPUT,
];

export interface TargetOptions {
  /** A deployed stack's name (`BranchApi-prod`): its outputs are read with DescribeStacks. */
  stack?: string;
  region?: string;
  /** A file written by `cdk deploy --outputs-file` (`{ "<stack>": { "<output>": "<value>" } }`). */
  outputs?: string;
}

/** The variables a stack's outputs set; an output the tooling does not read is left out. */
export const variablesOfOutputs = (outputs: Readonly<Record<string, string>>): Env =>
  Object.fromEntries(
    OPERATOR_OUTPUTS.filter(({ output }) => outputs[output] !== undefined).map(({ output, envVar }) => [
      envVar,
      outputs[output],
    ]),
  );

/** The outputs of one stack in a `cdk deploy --outputs-file` file: the one stack, or the one named. */
export const readOutputsFile = (file: string, stack?: string): Record<string, string> => {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new ConfigError(`--outputs ${file}: not a readable JSON file (${(error as Error).message})`);
  }
  const stacks = (parsed ?? {}) as Record<string, Record<string, string>>;
  const names = Object.keys(stacks);
  const name = stack ?? (names.length === 1 ? names[0] : undefined);
  if (name === undefined || typeof stacks[name] !== 'object') {
    throw new ConfigError(
      `--outputs ${file}: ${stack ? `no stack ${stack}` : `${names.length} stacks`} in it (${names.join(', ') || 'none'}); name one with --stack`,
    );
  }
  return stacks[name];
};

/** A deployed stack's outputs, as CloudFormation's DescribeStacks answers them. */
export const describeStackOutputs = async (stack: string, region?: string): Promise<Record<string, string>> => {
  // Loaded only when a stack is named: the CDK app reads OPERATOR_OUTPUTS from this module too.
  const { CloudFormationClient, DescribeStacksCommand } = await import('@aws-sdk/client-cloudformation');
  const client = new CloudFormationClient(region ? { region } : {});
  try {
    const { Stacks } = await client.send(new DescribeStacksCommand({ StackName: stack }));
    return Object.fromEntries(
      (Stacks?.[0]?.Outputs ?? []).flatMap(({ OutputKey, OutputValue }) =>
        OutputKey && OutputValue !== undefined ? [[OutputKey, OutputValue]] : [],
      ),
    );
  } catch (error) {
    throw new ConfigError(
      `--stack ${stack}: DescribeStacks failed: ${(error as Error).name}: ${(error as Error).message}`,
    );
  } finally {
    client.destroy();
  }
};

/**
 * The environment with the target's outputs applied: `--outputs` or `--stack` set the variables
 * (over any already set), `--region` sets AWS_REGION. Without them, the environment as it is.
 */
export const resolveTarget = async (options: TargetOptions, env: Env): Promise<Env> => {
  const region = options.region ? { AWS_REGION: options.region } : {};
  if (options.outputs)
    return { ...env, ...region, ...variablesOfOutputs(readOutputsFile(options.outputs, options.stack)) };
  if (options.stack) {
    const outputs = await describeStackOutputs(options.stack, options.region ?? (env.AWS_REGION || undefined));
    return { ...env, ...region, ...variablesOfOutputs(outputs) };
  }
  return { ...env, ...region };
};

/**
 * On a deployed stack (no DYNAMODB_ENDPOINT), every output the tooling needs must be set before
 * it writes anything: a missing one is an error naming the output, its variable and the fix.
 */
export const missingOutputs = (env: Env): OperatorOutput[] =>
  env.DYNAMODB_ENDPOINT?.trim() ? [] : OPERATOR_OUTPUTS.filter(({ envVar }) => !env[envVar]?.trim());

export const assertDeployedTarget = (env: Env): void => {
  const missing = missingOutputs(env);
  if (missing.length === 0) return;
  throw new ConfigError(
    `Not configured for a deployed stack: ${missing.map(({ output, envVar }) => `${envVar} (stack output ${output})`).join(', ')} not set. ` +
      'Run with --stack <stack name> (or --outputs <file of cdk deploy --outputs-file>), or set the variables from the outputs',
  );
};
