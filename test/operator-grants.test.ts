/**
 * The operator's grants (lib/operator/grants.ts): one entry per operator command and console page,
 * every resource one of the stack outputs the tooling reads, and the IAM policy docs/deploy.md
 * shows generated from them (`npm run docs:counts`).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { markers, withGenerated } from '../lib/infra/counts';
import { OPERATOR_GRANTS, operatorPolicy, policyFor, renderOperatorPolicy } from '../lib/operator/grants';
import { OPERATOR_OUTPUTS } from '../lib/operator/target';

const DEPLOY_GUIDE = join(import.meta.dirname, '..', 'docs', 'deploy.md');

it('states every operator command and the console pages', () => {
  expect(Object.keys(OPERATOR_GRANTS).sort()).toEqual(
    [
      'keys create',
      'keys list',
      'keys update',
      'keys disable',
      'keys enable',
      'keys roll',
      'keys revoke',
      'keys activity',
      'keys audit',
      'usage',
      'usage summary',
      'usage rebuild',
      'usage replay',
      'console keys page',
      'console usage page',
    ].sort(),
  );
});

it('generates a policy on the outputs the tooling reads, with no wildcard', () => {
  const policy = operatorPolicy();
  const placeholders = new Set(
    policy.Statement.flatMap((statement) => statement.Resource).flatMap((arn) =>
      [...arn.matchAll(/\$\{(\w+)\}/g)].map(([, name]) => name),
    ),
  );
  // Every output but the rate-limit counters', which only the API functions touch.
  expect([...placeholders].sort()).toEqual(
    [
      'Account',
      'Region',
      ...OPERATOR_OUTPUTS.map(({ output }) => output).filter((o) => o !== 'RateLimitsTableName'),
    ].sort(),
  );
  expect(JSON.stringify(policy)).not.toContain('*');
  // Only the key actions, the activity log's flush and the audit put key events.
  expect(policy.Statement.at(-1)).toEqual({
    Sid: 'KeyEvents',
    Effect: 'Allow',
    Action: ['events:PutEvents'],
    Resource: ['arn:aws:events:${Region}:${Account}:event-bus/${KeyEventBusName}'],
  });
});

it('resolves to the stack values, index ARNs apart from their table', () => {
  const statements = policyFor(operatorPolicy({ 'keys list': OPERATOR_GRANTS['keys list'] }), {
    Region: 'eu-west-1',
    Account: '123456789012',
    KeysTableName: 'keys-x',
    BranchDataTableName: 'branch-x',
    RollupsTableName: 'rollups-x',
  });
  expect(statements.map(({ Action, Resource }) => [Action, Resource])).toEqual([
    [['dynamodb:Query'], ['arn:aws:dynamodb:eu-west-1:123456789012:table/keys-x/index/by-branch']],
    [['dynamodb:GetItem'], ['arn:aws:dynamodb:eu-west-1:123456789012:table/branch-x']],
    [['dynamodb:Query'], ['arn:aws:dynamodb:eu-west-1:123456789012:table/rollups-x']],
  ]);
});

it('is shown in docs/deploy.md as generated (npm run docs:counts)', () => {
  const text = readFileSync(DEPLOY_GUIDE, 'utf8');
  const { start, end } = markers('policy');
  const block = renderOperatorPolicy(start, end);
  expect(withGenerated(text, 'policy', block)).toBe(text);
  expect(JSON.parse(/```json\n([\s\S]*)```/.exec(block)![1]!)).toEqual(operatorPolicy());
});
