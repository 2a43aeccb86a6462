/**
 * The operator tooling's target (lib/operator/target.ts): a deployed stack's outputs, from the file
 * `cdk deploy --outputs-file` writes, become the variables the tooling reads; its region is found
 * as the AWS CLI finds it; what is missing stops it before any write, naming what supplies it. An
 * outputs file is the operator's input: anything but a small regular JSON file of names is refused
 * before it is read.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOperatorContext } from '../lib/operator/context';
import { OPERATOR_OUTPUTS, OUTPUTS_FILE_MAX_BYTES, resolveRegion, resolveTarget } from '../lib/operator/target';
import { runCli } from './support/cli';
import { mainBranch } from './support/fixtures';
import { createKey, createTables, seedBranches } from './support/harness';

let dir: string;
beforeAll(() => (dir = mkdtempSync(join(tmpdir(), 'operator-target-'))));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let files = 0;
const writeOutputs = (content: unknown) => {
  const file = join(dir, `outputs-${(files += 1)}.json`);
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
};
const allOutputs = Object.fromEntries(OPERATOR_OUTPUTS.map(({ output }) => [output, `deployed-${output}`]));

it('--outputs: every output becomes its variable, over what the environment had; --region sets AWS_REGION', async () => {
  const file = writeOutputs({ 'BranchApi-prod': { ...allOutputs, ApiBaseUrl: 'https://x' } });
  const env = await resolveTarget({ outputs: file, region: 'eu-west-1' }, { KEYS_TABLE: 'stale', HOME: '/h' });
  for (const { output, envVar } of OPERATOR_OUTPUTS) expect(env[envVar]).toBe(`deployed-${output}`);
  expect(env).toMatchObject({ AWS_REGION: 'eu-west-1', HOME: '/h' });
  expect(() => createOperatorContext(env).close()).not.toThrow();
});

it('--outputs with several stacks needs --stack to pick one', async () => {
  const file = writeOutputs({ 'BranchApi-a': allOutputs, 'BranchApi-b': allOutputs });
  await expect(resolveTarget({ outputs: file }, {})).rejects.toThrow(
    /2 stacks in it \(BranchApi-a, BranchApi-b\); name one with --stack/,
  );
  const env = await resolveTarget({ outputs: file, stack: 'BranchApi-b', region: 'eu-west-1' }, {});
  expect(env.KEYS_TABLE).toBe('deployed-KeysTableName');
});

it('a deployed target missing an output is refused before anything runs, naming output, variable and fix', async () => {
  const { ActivityTableName: _dropped, ...shipped } = allOutputs;
  const env = await resolveTarget({ outputs: writeOutputs({ old: shipped }), region: 'us-east-1' }, {});
  expect(() => createOperatorContext(env)).toThrow(
    /ACTIVITY_TABLE \(stack output ActivityTableName\) not set\. Run with --stack <stack name>/,
  );
});

it('a local endpoint needs no output: the local names apply', () => {
  const ctx = createOperatorContext({ DYNAMODB_ENDPOINT: 'http://127.0.0.1:1' });
  expect(ctx.tables.activity).toBe('branch-api-key-activity');
  ctx.close();
});

describe('the region, as the AWS CLI finds it', () => {
  it('takes --region, then AWS_REGION, then AWS_DEFAULT_REGION', async () => {
    const env = { AWS_REGION: 'eu-west-2', AWS_DEFAULT_REGION: 'eu-west-3' };
    expect(await resolveRegion({ region: 'eu-west-1' }, env)).toBe('eu-west-1');
    expect(await resolveRegion({}, env)).toBe('eu-west-2');
    expect(await resolveRegion({}, { AWS_DEFAULT_REGION: 'eu-west-3' })).toBe('eu-west-3');
  });

  it('with nothing named, says there is no target and every way to name one', () => {
    expect(() => createOperatorContext({})).toThrow(
      'No target: set DYNAMODB_ENDPOINT for a local DynamoDB (npm start prints it), or name a deployed stack with ' +
        '--outputs <file written by cdk deploy --outputs-file> or --stack <stack name>; and no region: run with ' +
        '--region <region>, or set AWS_REGION (or AWS_DEFAULT_REGION), or set region in the profile "default" ' +
        '(AWS_PROFILE) of ~/.aws/config (AWS_CONFIG_FILE)',
    );
  });

  describe('from the profile (AWS_PROFILE, AWS_CONFIG_FILE), with the CLI on the outputs file alone', () => {
    let outputs: string;
    let keyId: string;
    /** A deployed target: no DYNAMODB_ENDPOINT, no region variable; DynamoDB calls go to `dynamodb`. */
    const profileEnv = (config: string, dynamodb: string) => {
      const configFile = join(dir, `config-${(files += 1)}`);
      writeFileSync(configFile, config);
      const credentials = join(dir, 'credentials');
      writeFileSync(credentials, '[ops]\naws_access_key_id = AKIDEXAMPLE\naws_secret_access_key = example\n');
      return {
        DYNAMODB_ENDPOINT: undefined,
        AWS_REGION: undefined,
        AWS_DEFAULT_REGION: undefined,
        AWS_ACCESS_KEY_ID: undefined,
        AWS_SECRET_ACCESS_KEY: undefined,
        ...Object.fromEntries(OPERATOR_OUTPUTS.map(({ envVar }) => [envVar, undefined])),
        AWS_PROFILE: 'ops',
        AWS_CONFIG_FILE: configFile,
        AWS_SHARED_CREDENTIALS_FILE: credentials,
        AWS_EC2_METADATA_DISABLED: 'true',
        AWS_ENDPOINT_URL_DYNAMODB: dynamodb,
        DYNAMODB_MAX_ATTEMPTS: '1',
      };
    };

    beforeAll(async () => {
      await createTables();
      await seedBranches();
      keyId = (await createKey({ name: 'profile' })).record.key_id;
      // This file's tables on the embedded DynamoDB, as a deployed stack's outputs name them.
      outputs = writeOutputs({
        'BranchApi-prod': Object.fromEntries(
          OPERATOR_OUTPUTS.map(({ output, envVar }) => [output, process.env[envVar] ?? 'branch-api-key-events']),
        ),
      });
    });

    it('is enough for --outputs outputs.json keys list', async () => {
      const env = profileEnv('[profile ops]\nregion = eu-west-3\n', process.env.DYNAMODB_ENDPOINT!);
      const result = await runCli(['--outputs', outputs, 'keys', 'list', '--branch', mainBranch.id, '--json'], env);
      expect(result.stderr).toBe('');
      expect(result.json.map((key: { key_id: string }) => key.key_id)).toContain(keyId);
    });

    it('is the region the calls go to', async () => {
      const env = profileEnv('[profile ops]\nregion = eu-west-3\n', 'http://127.0.0.1:9');
      const result = await runCli(['--outputs', outputs, 'keys', 'list', '--branch', mainBranch.id], env);
      expect(result.stderr).toMatch(/^error: DynamoDB in eu-west-3 is not reachable/);
    });

    it('missing, is named with each flag and variable that supplies it, and the profile looked at', async () => {
      const env = profileEnv('[profile ops]\noutput = json\n', process.env.DYNAMODB_ENDPOINT!);
      const result = await runCli(['--outputs', outputs, 'keys', 'list', '--branch', mainBranch.id], env);
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(
        'error: No region for the deployed stack: run with --region <region>, or set AWS_REGION (or ' +
          `AWS_DEFAULT_REGION), or set region in the profile "ops" (AWS_PROFILE) of ${env.AWS_CONFIG_FILE} (AWS_CONFIG_FILE)\n`,
      );
    });
  });
});

describe('a hostile outputs file', () => {
  /** Bytes this process has read through read(2) and friends: what a refusal must not spend. */
  const bytesRead = () => Number(/^rchar: (\d+)$/m.exec(readFileSync('/proc/self/io', 'utf8'))![1]);
  /** The refusal, and how many bytes reading the file cost. */
  const refusal = async (file: string) => {
    const before = bytesRead();
    const error = await resolveTarget({ outputs: file, region: 'eu-west-1' }, {}).then(
      () => undefined,
      (error: Error) => error,
    );
    return { message: error?.message, read: bytesRead() - before };
  };

  it.each([
    ['/dev/zero', () => '/dev/zero', /a character device, not a regular file/],
    [
      'a FIFO nobody writes to',
      () => {
        const fifo = join(dir, 'fifo');
        execFileSync('mkfifo', [fifo]);
        return fifo;
      },
      /a FIFO, not a regular file/,
    ],
    ['a directory', () => dir, /a directory, not a regular file/],
    [
      'a 150 MB file',
      () => {
        const big = join(dir, 'big.json');
        writeFileSync(big, '{');
        truncateSync(big, 150 * 1024 * 1024);
        return big;
      },
      /157286400 bytes, more than an outputs file holds \(at most 1048576\)/,
    ],
  ])('%s is refused in one line, from fstat, without reading it', async (_name, make, reason) => {
    const file = make();
    const { message, read } = await refusal(file);
    expect(message).toMatch(new RegExp(`^--outputs ${file}: ${reason.source}`));
    expect(message).not.toContain('\n');
    expect(read).toBeLessThan(64 * 1024);
  });

  it('one byte past the bound is refused; a file at it is read', async () => {
    const over = join(dir, 'over.json');
    writeFileSync(over, Buffer.alloc(OUTPUTS_FILE_MAX_BYTES + 1, ' '));
    expect((await refusal(over)).message).toMatch(/1048577 bytes, more than an outputs file holds/);
    const padded = JSON.stringify({ s: allOutputs });
    const at = writeOutputs(padded.padEnd(OUTPUTS_FILE_MAX_BYTES, ' '));
    expect((await resolveTarget({ outputs: at, region: 'eu-west-1' }, {})).KEYS_TABLE).toBe('deployed-KeysTableName');
  });

  it.each<[string, unknown, RegExp]>([
    ['an array', ['branch-api-keys'], /got \["branch-api-keys"\]$/],
    ['a number', 42, /got 42$/],
    ['an object', { name: 'branch-api-keys' }, /got \{"name":"branch-api-keys"\}$/],
    ['a NUL', 'branch-api\u0000keys', /got "branch-api\\u0000keys"$/],
    ['a line break', 'branch-api\nkeys', /got "branch-api\\nkeys"$/],
    ['a name too short', 'ab', /got "ab"$/],
  ])('a table name that is %s is refused', async (_name, value, got) => {
    const file = writeOutputs({ 'BranchApi-prod': { ...allOutputs, KeysTableName: value } });
    const { message } = await refusal(file);
    expect(message).toMatch(/output KeysTableName must be a DynamoDB table name \(3-255 of A-Z a-z 0-9 _ \. -\), got /);
    expect(message).toMatch(got);
    expect(message).not.toContain('\n');
  });

  it('--stack names a stack of the file, never a property every object has', async () => {
    const file = writeOutputs({ 'BranchApi-prod': allOutputs });
    await expect(resolveTarget({ outputs: file, stack: 'constructor' }, {})).rejects.toThrow(
      /no stack constructor in it \(BranchApi-prod\); name one with --stack/,
    );
  });

  it('a bus name breaking EventBridge’s rule is refused', async () => {
    const file = writeOutputs({ 'BranchApi-prod': { ...allOutputs, KeyEventBusName: 'bus name' } });
    expect((await refusal(file)).message).toMatch(/output KeyEventBusName must be an EventBridge event bus name/);
  });

  it.each<[string, string]>([
    ['not JSON', '{"BranchApi-prod":'],
    ['not JSON, with line breaks and escapes in it', '{"a":\n\n x\u001b[2J'],
    ['a list', '[{"KeysTableName":"branch-api-keys"}]'],
    ['a stack that is not an object', '{"BranchApi-prod":["branch-api-keys"]}'],
    ['null', 'null'],
  ])('%s is refused', async (_name, text) => {
    const { message } = await refusal(writeOutputs(text));
    expect(message).toMatch(/^--outputs .*: not (JSON|an outputs file)/);
    expect(message).not.toContain('\n');
  });

  it('the CLI says so in one line and exits 1', async () => {
    const result = await runCli(['--outputs', '/dev/zero', 'keys', 'list', '--branch', mainBranch.id]);
    expect(result).toMatchObject({
      code: 1,
      stderr:
        'error: --outputs /dev/zero: a character device, not a regular file; give the file cdk deploy --outputs-file wrote\n',
    });
  });
});
