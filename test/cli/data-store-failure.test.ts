/**
 * What the CLI says when DynamoDB refuses a request: a table that does not exist is named with its
 * variable, its stack output and the options that point the CLI at the stack; a denied action is
 * named with its table. Against the embedded DynamoDB; the denial comes from the verifier's
 * policy-enforcing proxy in front of it (lib/verify/recording-proxy.ts), as IAM would answer.
 */
import { join } from 'node:path';
import { startRecordingProxy, type RecordingProxy } from '../../lib/verify/recording-proxy';
import { runCli, PROJECT_ROOT } from '../support/cli';

let proxy: RecordingProxy | undefined;

beforeAll(async () => {
  expect((await runCli(['tables', 'create'])).code).toBe(0);
  expect((await runCli(['seed', join(PROJECT_ROOT, 'seed', 'demo.json')])).code).toBe(0);
}, 60_000);

afterAll(async () => proxy?.close());

it('names a missing table, its variable and stack output, and how to point the CLI at the stack', async () => {
  const result = await runCli(['keys', 'list', '--branch', 'br_demo'], { BRANCH_DATA_TABLE: 'no-such-branch-data' });
  expect(result.code).toBe(1);
  expect(result.stderr).toBe(
    'error: DynamoDB GetItem: no table no-such-branch-data (BRANCH_DATA_TABLE, stack output BranchDataTableName). ' +
      'Point the CLI at the deployed stack: --stack <stack name> (or --outputs <file of cdk deploy --outputs-file>), ' +
      'or set the variable from its output\n',
  );
});

it('names the action and the table an AccessDeniedException refused', async () => {
  const keysIndex = new RegExp(`table/${process.env.KEYS_TABLE}/index/`);
  proxy = await startRecordingProxy(process.env.DYNAMODB_ENDPOINT!, new Map(), (action, arn) => !keysIndex.test(arn));
  const result = await runCli(['keys', 'list', '--branch', 'br_demo', '--json'], { DYNAMODB_ENDPOINT: proxy.endpoint });
  expect(result.code).toBe(1);
  expect(proxy.denied).toEqual([{ action: 'dynamodb:Query', table: process.env.KEYS_TABLE, index: 'by-branch' }]);
  expect(JSON.parse(result.stderr)).toEqual({
    error: {
      code: 'data_store_error',
      message:
        `DynamoDB denied dynamodb:Query on table ${process.env.KEYS_TABLE} (KEYS_TABLE, stack output KeysTableName) ` +
        'to your AWS identity: its IAM policy needs the operator grants (docs/deploy.md "Operator permissions")',
    },
  });
});
