/**
 * What the operator tooling (CLI and console) reads from a deployed stack, and where it finds it.
 * Each entry is a stack output of that name (lib/infra/branch-api-stack.ts makes one per entry)
 * whose value the tooling reads from an environment variable. `--stack NAME` fills the variables
 * from CloudFormation's DescribeStacks, `--outputs FILE` from what `cdk deploy --outputs-file`
 * wrote (docs/deploy.md "Load a branch and create the first key", "Outputs").
 */
import { constants, promises as fs } from 'node:fs';
import { buffer } from 'node:stream/consumers';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { ConfigError, readRegion } from '../../shared/config/env';
import { OPERATOR_TABLES, operatorTableOutput, TABLE_ENV } from '../../shared/data/tables';

type Env = Record<string, string | undefined>;

export interface OperatorOutput {
  /** The stack output's name, e.g. `KeysTableName`. */
  readonly output: string;
  /** The environment variable the tooling reads it from, e.g. `KEYS_TABLE`. */
  readonly envVar: string;
  /** What it names, for the output's description and the messages. */
  readonly what: string;
  /** The value's naming rule, as AWS states it for that resource: a value breaking it is refused. */
  readonly name: { readonly rule: string; readonly pattern: RegExp };
}

const DYNAMODB_TABLE_NAME = { rule: 'a DynamoDB table name (3-255 of A-Z a-z 0-9 _ . -)', pattern: /^[\w.-]{3,255}$/ };

/** The key events bus: the actions' events go there (shared/data/key-events.ts). */
export const KEY_EVENT_BUS_OUTPUT = {
  output: 'KeyEventBusName',
  envVar: 'KEY_EVENT_BUS_NAME',
  what: 'the key events bus (add event rules to it; the operator tooling puts its own events here)',
  name: { rule: 'an EventBridge event bus name (1-256 of A-Z a-z 0-9 / _ . -)', pattern: /^[\w/.-]{1,256}$/ },
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
    name: DYNAMODB_TABLE_NAME,
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

/** A value as a message shows it: JSON (so NUL and line breaks are visible), cut at 60 characters. */
const shown = (value: unknown): string => {
  const json = JSON.stringify(value) ?? String(value);
  return json.length > 60 ? `${json.slice(0, 59)}…` : json;
};

/**
 * The variables a stack's outputs set; an output the tooling does not read is left out. A value
 * that is not a string of its resource's naming rule is refused, `source` saying where it came from.
 */
export const variablesOfOutputs = (outputs: Readonly<Record<string, unknown>>, source: string): Env =>
  Object.fromEntries(
    OPERATOR_OUTPUTS.filter(({ output }) => outputs[output] !== undefined).map(({ output, envVar, name }) => {
      const value = outputs[output];
      if (typeof value !== 'string' || !name.pattern.test(value)) {
        throw new ConfigError(`${source}: output ${output} must be ${name.rule}, got ${shown(value)}`);
      }
      return [envVar, value];
    }),
  );

/** An outputs file is a few KB: 1 MiB is far past any, and read within 3 s (docs/deploy.md "Outputs"). */
export const OUTPUTS_FILE_MAX_BYTES = 1024 * 1024;
export const OUTPUTS_FILE_TIMEOUT_MS = 3000;

const FILE_KINDS = [
  ['isDirectory', 'a directory'],
  ['isFIFO', 'a FIFO'],
  ['isCharacterDevice', 'a character device'],
  ['isBlockDevice', 'a block device'],
  ['isSocket', 'a socket'],
] as const;

/**
 * The text of a small regular file, decided on before reading: anything else (a FIFO, /dev/zero, a
 * directory) or anything larger is refused from fstat, and no more than the bound is ever read.
 */
const readSmallRegularFile = async (file: string, fail: (why: string) => ConfigError): Promise<string> => {
  // O_NONBLOCK: opening a FIFO nobody writes to returns at once (for fstat to refuse) instead of waiting.
  const handle = await fs
    .open(file, constants.O_RDONLY | constants.O_NONBLOCK)
    .catch((error: NodeJS.ErrnoException) => {
      throw fail(`cannot be opened (${error.code ?? error.message})`);
    });
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) {
      const kind = FILE_KINDS.find(([is]) => stat[is]())?.[1] ?? 'not a regular file';
      throw fail(`${kind}, not a regular file; give the file cdk deploy --outputs-file wrote`);
    }
    if (stat.size > OUTPUTS_FILE_MAX_BYTES) {
      throw fail(`${stat.size} bytes, more than an outputs file holds (at most ${OUTPUTS_FILE_MAX_BYTES})`);
    }
    // One byte past the bound at most, for a file that grows while it is read.
    const bytes = await buffer(handle.createReadStream({ start: 0, end: OUTPUTS_FILE_MAX_BYTES, autoClose: false }));
    if (bytes.length > OUTPUTS_FILE_MAX_BYTES) throw fail(`grew past ${OUTPUTS_FILE_MAX_BYTES} bytes while read`);
    return bytes.toString('utf8');
  } finally {
    await handle.close();
  }
};

const OutputsFileSchema = z.record(z.string(), z.record(z.string(), z.unknown()));

/**
 * The outputs of one stack in a `cdk deploy --outputs-file` file (`{ "<stack>": { "<output>":
 * "<value>" } }`): the one stack, or the one named; each value the tooling reads checked.
 */
export const readOutputsFile = async (file: string, stack?: string): Promise<Env> => {
  const fail = (why: string) => new ConfigError(`--outputs ${file}: ${why}`);
  const late = sleep(OUTPUTS_FILE_TIMEOUT_MS, undefined, { ref: false }).then(() => {
    throw fail(`not read within ${OUTPUTS_FILE_TIMEOUT_MS / 1000} s`);
  });
  const text = await Promise.race([readSmallRegularFile(file, fail), late]);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    // V8's message quotes the text: kept on one line (the CLI escapes what is left for the terminal).
    throw fail(`not JSON (${(error as Error).message.replace(/\s+/g, ' ').slice(0, 200)})`);
  }
  const stacks = OutputsFileSchema.safeParse(parsed);
  if (!stacks.success) throw fail('not an outputs file: expected { "<stack>": { "<output>": "<value>" } }');
  const names = Object.keys(stacks.data);
  const name = stack ?? (names.length === 1 ? names[0] : undefined);
  const outputs = name !== undefined && Object.hasOwn(stacks.data, name) ? stacks.data[name] : undefined;
  if (outputs === undefined) {
    throw fail(
      `${stack ? `no stack ${stack}` : `${names.length} stacks`} in it (${names.join(', ') || 'none'}); name one with --stack`,
    );
  }
  return variablesOfOutputs(outputs, `--outputs ${file}`);
};

/** A deployed stack's outputs, as CloudFormation's DescribeStacks answers them. */
const describeStackOutputs = async (stack: string, region: string): Promise<Record<string, string>> => {
  // Loaded only when a stack is named: the CDK app reads OPERATOR_OUTPUTS from this module too.
  const { CloudFormationClient, DescribeStacksCommand } = await import('@aws-sdk/client-cloudformation');
  const client = new CloudFormationClient({ region });
  try {
    const { Stacks } = await client.send(new DescribeStacksCommand({ StackName: stack }));
    return Object.fromEntries(
      (Stacks?.[0]?.Outputs ?? []).flatMap(({ OutputKey, OutputValue }) =>
        OutputKey && OutputValue !== undefined ? [[OutputKey, OutputValue]] : [],
      ),
    );
  } catch (error) {
    const { name, message } = error as Error;
    throw new ConfigError(`--stack ${stack}: DescribeStacks failed: ${name}: ${message}`);
  } finally {
    client.destroy();
  }
};

/**
 * The region as the AWS CLI finds it: `--region`, AWS_REGION, AWS_DEFAULT_REGION, then the AWS
 * SDK's own resolver (the profile's `region` in AWS_CONFIG_FILE or ~/.aws/config, AWS_PROFILE
 * picking the profile; on EC2, the instance's region). Undefined when none of them has one.
 */
export const resolveRegion = async (options: Pick<TargetOptions, 'region'>, env: Env): Promise<string | undefined> => {
  const given = options.region?.trim() || readRegion(env);
  if (given) return given;
  const { DynamoDBClient } = await import('@aws-sdk/client-dynamodb');
  const client = new DynamoDBClient({});
  try {
    return (await client.config.region()).trim() || undefined;
  } catch {
    return undefined; // the SDK's "Region is missing"
  } finally {
    client.destroy();
  }
};

/** Where a region can come from, for the message that finds none (the profile as the SDK picks it). */
const regionSources = (env: Env): string =>
  'run with --region <region>, or set AWS_REGION (or AWS_DEFAULT_REGION), or set region in the profile ' +
  `"${env.AWS_PROFILE?.trim() || 'default'}" (AWS_PROFILE) of ${env.AWS_CONFIG_FILE?.trim() || '~/.aws/config'} (AWS_CONFIG_FILE)`;

/** A stack is named: by `--stack`, `--outputs`, or the variables of its outputs. */
const namesDeployedStack = (options: TargetOptions, env: Env): boolean =>
  Boolean(options.stack || options.outputs) || OPERATOR_OUTPUTS.some(({ envVar }) => env[envVar]?.trim());

/**
 * The environment with the target applied: `--outputs` or `--stack` set the variables of the
 * outputs (over any already set); for a deployed stack AWS_REGION is set to its region, resolved
 * as the AWS CLI does. Local (DYNAMODB_ENDPOINT), only `--region` sets it.
 */
export const resolveTarget = async (options: TargetOptions, env: Env): Promise<Env> => {
  const outputs = options.outputs ? await readOutputsFile(options.outputs, options.stack) : {};
  const region =
    !env.DYNAMODB_ENDPOINT?.trim() && namesDeployedStack(options, env)
      ? await resolveRegion(options, env)
      : options.region?.trim();
  const regionEnv = region ? { AWS_REGION: region } : {};
  if (options.stack && !options.outputs) {
    if (!region) throw new ConfigError(`--stack ${options.stack}: no region: ${regionSources(env)}`);
    const described = await describeStackOutputs(options.stack, region);
    return { ...env, ...regionEnv, ...variablesOfOutputs(described, `--stack ${options.stack}`) };
  }
  return { ...env, ...regionEnv, ...outputs };
};

/**
 * On a deployed stack (no DYNAMODB_ENDPOINT), every output the tooling needs and the region must
 * be set before it writes anything: what is missing is named, with what supplies it.
 */
export const assertDeployedTarget = (env: Env): void => {
  if (env.DYNAMODB_ENDPOINT?.trim()) return;
  const missing = OPERATOR_OUTPUTS.filter(({ envVar }) => !env[envVar]?.trim());
  const region = readRegion(env) ? '' : `; and no region: ${regionSources(env)}`;
  if (missing.length === OPERATOR_OUTPUTS.length) {
    throw new ConfigError(
      'No target: set DYNAMODB_ENDPOINT for a local DynamoDB (npm start prints it), or name a deployed stack ' +
        `with --outputs <file written by cdk deploy --outputs-file> or --stack <stack name>${region}`,
    );
  }
  if (missing.length > 0) {
    throw new ConfigError(
      `Not configured for a deployed stack: ${missing.map(({ output, envVar }) => `${envVar} (stack output ${output})`).join(', ')} not set. ` +
        `Run with --stack <stack name> (or --outputs <file of cdk deploy --outputs-file>), or set the variables from the outputs${region}`,
    );
  }
  if (region) throw new ConfigError(`No region for the deployed stack: ${regionSources(env)}`);
};
