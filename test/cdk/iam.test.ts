/**
 * The IAM evaluator of the nag rules and the verifier (lib/infra/nag/iam.ts) against IAM's documented evaluation logic for
 * identity-based policies: explicit Deny first, then Allow, else an implicit deny; NotAction and
 * NotResource; wildcards in actions (case-insensitive) and in ARNs (within a segment, unless the
 * `*` ends one); a condition it can't evaluate is never taken as allowing.
 */
import { actionMatches, evaluate, NOT_ALLOWED, resourceMatches, type Statement } from '../../lib/infra/nag/iam';

const TABLE = 'arn:aws:dynamodb:us-east-1:000000000000:table/keys';
const INDEX = `${TABLE}/index/by-branch`;
const allow = (Action: string | string[], Resource: string | string[] = TABLE): Statement => ({
  Effect: 'Allow',
  Action,
  Resource,
  source: 'policy A',
});

describe('matching', () => {
  it.each([
    ['dynamodb:GetItem', 'dynamodb:GetItem', true],
    ['dynamodb:getitem', 'dynamodb:GetItem', true],
    ['dynamodb:Get*', 'dynamodb:GetItem', true],
    ['dynamodb:Get*', 'dynamodb:Query', false],
    ['dynamodb:?etItem', 'dynamodb:GetItem', true],
    ['*', 'sqs:SendMessage', true],
    ['dynamodb:GetItem', 'dynamodb:GetItems', false],
  ])('action %s against %s: %s', (pattern, action, matches) => {
    expect(actionMatches(pattern, action)).toBe(matches);
  });

  it.each([
    ['*', INDEX, true],
    [TABLE, INDEX, false],
    [`${TABLE}/index/*`, INDEX, true],
    ['arn:aws:dynamodb:*:*:table/keys', TABLE, true],
    // A `*` within a segment stays in it; one that ends the segment reaches past the colons.
    ['arn:aws:dynamodb:us-*-1:000000000000:table/keys', TABLE, true],
    ['arn:aws:dynamodb:us-east-1:*', TABLE, true],
    ['arn:aws:dynamodb:us-east-1:000000000000:table/KEYS', TABLE, false],
    ['arn:aws:dynamodb:us-east-?:000000000000:table/keys', TABLE, true],
  ])('resource %s against %s: %s', (pattern, arn, matches) => {
    expect(resourceMatches(pattern, arn)).toBe(matches);
  });
});

describe('evaluation', () => {
  it('allows what an Allow names, and nothing else (an implicit deny)', () => {
    expect(evaluate([allow('dynamodb:GetItem')], 'dynamodb:GetItem', TABLE)).toEqual({ allowed: true });
    expect(evaluate([allow('dynamodb:GetItem')], 'dynamodb:GetItem', INDEX)).toEqual({
      allowed: false,
      reason: NOT_ALLOWED,
    });
    expect(evaluate([], 'dynamodb:GetItem', TABLE)).toEqual({ allowed: false, reason: NOT_ALLOWED });
  });

  it('lets an explicit Deny win over any Allow, whatever their order', () => {
    const deny: Statement = { Effect: 'Deny', Action: 'dynamodb:*', Resource: '*', source: 'policy B' };
    for (const statements of [
      [allow('*', '*'), deny],
      [deny, allow('*', '*')],
    ]) {
      expect(evaluate(statements, 'dynamodb:GetItem', TABLE)).toEqual({
        allowed: false,
        reason: 'denied by Deny dynamodb:* in policy B',
      });
    }
  });

  it('reads NotAction and NotResource as everything but what they list', () => {
    const allButQuery: Statement = { Effect: 'Allow', NotAction: 'dynamodb:Query', Resource: '*' };
    expect(evaluate([allButQuery], 'dynamodb:GetItem', TABLE).allowed).toBe(true);
    expect(evaluate([allButQuery], 'dynamodb:Query', TABLE).allowed).toBe(false);
    const denyElsewhere: Statement = { Effect: 'Deny', Action: '*', NotResource: [TABLE] };
    expect(evaluate([allow('*', '*'), denyElsewhere], 'dynamodb:GetItem', TABLE).allowed).toBe(true);
    expect(evaluate([allow('*', '*'), denyElsewhere], 'dynamodb:GetItem', INDEX).reason).toBe(
      `denied by Deny * on every resource but ${TABLE}`,
    );
  });

  it('never takes a condition it cannot evaluate as allowing, and says which', () => {
    const conditional: Statement = {
      ...allow('dynamodb:GetItem'),
      Condition: { Bool: { 'aws:SecureTransport': 'true' } },
    };
    expect(evaluate([conditional], 'dynamodb:GetItem', TABLE)).toEqual({
      allowed: false,
      reason:
        "Allow dynamodb:GetItem in policy A allows it only under a condition the run can't evaluate (aws:SecureTransport)",
    });
    // Beside an unconditional Allow, a conditional Deny still leaves the answer open.
    const conditionalDeny: Statement = {
      Effect: 'Deny',
      Action: '*',
      Resource: '*',
      Condition: { IpAddress: { 'aws:SourceIp': '10.0.0.0/8' } },
    };
    expect(evaluate([allow('dynamodb:GetItem'), conditionalDeny], 'dynamodb:GetItem', TABLE)).toEqual({
      allowed: false,
      reason: "Deny * applies under a condition the run can't evaluate (aws:SourceIp)",
    });
    // A conditional Allow beside an unconditional one changes nothing.
    expect(evaluate([conditional, allow('dynamodb:GetItem')], 'dynamodb:GetItem', TABLE).allowed).toBe(true);
  });

  it('ignores a statement that names no action', () => {
    expect(evaluate([{ Effect: 'Allow', Resource: '*' }], 'dynamodb:GetItem', TABLE).allowed).toBe(false);
  });
});
