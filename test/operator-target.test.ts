/**
 * The operator tooling's target (lib/operator/target.ts): a deployed stack's outputs, from the file
 * `cdk deploy --outputs-file` writes, become the variables the tooling reads; a missing one stops
 * it before any write with a message naming the output, the variable and the fix.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOperatorContext } from '../lib/operator/context';
import { OPERATOR_OUTPUTS, resolveTarget } from '../lib/operator/target';

let dir: string;
beforeAll(() => (dir = mkdtempSync(join(tmpdir(), 'operator-target-'))));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const outputsFile = (stacks: Record<string, Record<string, string>>) => {
  const file = join(dir, `outputs-${Object.keys(stacks).join('-')}.json`);
  writeFileSync(file, JSON.stringify(stacks));
  return file;
};
const allOutputs = Object.fromEntries(OPERATOR_OUTPUTS.map(({ output }) => [output, `deployed-${output}`]));

it('--outputs: every output becomes its variable, over what the environment had; --region sets AWS_REGION', async () => {
  const file = outputsFile({ 'BranchApi-prod': { ...allOutputs, ApiBaseUrl: 'https://x' } });
  const env = await resolveTarget({ outputs: file, region: 'eu-west-1' }, { KEYS_TABLE: 'stale', HOME: '/h' });
  for (const { output, envVar } of OPERATOR_OUTPUTS) expect(env[envVar]).toBe(`deployed-${output}`);
  expect(env).toMatchObject({ AWS_REGION: 'eu-west-1', HOME: '/h' });
  expect(() => createOperatorContext(env).close()).not.toThrow();
});

it('--outputs with several stacks needs --stack to pick one', async () => {
  const file = outputsFile({ 'BranchApi-a': allOutputs, 'BranchApi-b': allOutputs });
  await expect(resolveTarget({ outputs: file }, {})).rejects.toThrow(
    /2 stacks in it \(BranchApi-a, BranchApi-b\); name one with --stack/,
  );
  const env = await resolveTarget({ outputs: file, stack: 'BranchApi-b' }, {});
  expect(env.KEYS_TABLE).toBe('deployed-KeysTableName');
});

it('a deployed target missing an output is refused before anything runs, naming output, variable and fix', async () => {
  const { ActivityTableName: _dropped, ...shipped } = allOutputs;
  const env = await resolveTarget({ outputs: outputsFile({ old: shipped }), region: 'us-east-1' }, {});
  expect(() => createOperatorContext(env)).toThrow(
    /ACTIVITY_TABLE \(stack output ActivityTableName\) not set\. Run with --stack <stack name>/,
  );
});

it('a local endpoint needs no output: the local names apply', () => {
  const ctx = createOperatorContext({ DYNAMODB_ENDPOINT: 'http://127.0.0.1:1' });
  expect(ctx.tables.activity).toBe('branch-api-key-activity');
  ctx.close();
});
