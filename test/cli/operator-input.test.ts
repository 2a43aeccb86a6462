/**
 * The operator library's input rules, called as a settings page would call them, against this
 * file's tables on the embedded DynamoDB: the strict date parser (impossible dates were rolled
 * over before), scope lists with empty entries (silently dropped before), and operations on one
 * key that must name its branch (revokeKey revoked any branch's key before).
 */
import { createOperatorContext, type OperatorContext } from '../../lib/operator/context';
import { OperatorError } from '../../lib/operator/errors';
import { parseIsoDate, parseScopes } from '../../lib/operator/input';
import { createKey, requireKeyOfBranch, revokeKey } from '../../lib/operator/keys';
import { readUsage } from '../../lib/operator/usage';
import { createTables, fixtureKeys, seedBranches } from '../support/harness';
import { mainBranch, otherBranch } from '../support/fixtures';

const refusal = (run: () => unknown): string => {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(OperatorError);
    expect((error as Error).message).not.toContain('\n');
    return (error as Error).message;
  }
  throw new Error('not refused');
};

describe('parseIsoDate', () => {
  it.each([
    ['2028-02-29', '2028-02-29T00:00:00.000Z'],
    ['2028-02-29T23:59:59Z', '2028-02-29T23:59:59.000Z'],
    ['2000-02-29T12:00', '2000-02-29T12:00:00.000Z'],
    ['2027-01-31T23:59:59.123456789Z', '2027-01-31T23:59:59.123Z'],
    ['2027-03-01T00:30:00+02:00', '2027-02-28T22:30:00.000Z'],
    ['2027-12-31T23:00:00-0130', '2028-01-01T00:30:00.000Z'],
    ['0099-06-01T00:00:00Z', '0099-06-01T00:00:00.000Z'],
  ])('reads %s as %s', (value, iso) => {
    expect(parseIsoDate(value, 'expires_at').toISOString()).toBe(iso);
  });

  it.each([
    ['2027-02-30T00:00:00Z', 'February 2027 has 28 days'],
    ['2027-02-30T00:00:00+02:00', 'February 2027 has 28 days'],
    ['2027-02-30T00:00:00-05:00', 'February 2027 has 28 days'],
    ['2027-02-29', 'February 2027 has 28 days'],
    ['1900-02-29', 'February 1900 has 28 days'],
    ['2027-04-31', 'April 2027 has 30 days'],
    ['2027-04-31T10:00:00+01:00', 'April 2027 has 30 days'],
    ['2027-00-10', 'there is no month 0'],
    ['2027-13-01', 'there is no month 13'],
    ['2027-01-00', 'January 2027 has 31 days'],
    ['2027-01-01T24:00:00Z', 'the hour must be 00-23'],
    ['2027-01-01T23:60:00Z', 'the minute must be 00-59'],
    ['2027-01-01T23:59:60Z', 'the second must be 00-59; leap seconds are not accepted'],
    ['2027-01-01T23:59:60+01:00', 'the second must be 00-59; leap seconds are not accepted'],
    ['2027-01-01T00:00:00+24:00', 'the UTC offset must be at most 23:59'],
  ])('refuses the impossible %s (%s)', (value, why) => {
    expect(refusal(() => parseIsoDate(value, 'expires_at'))).toBe(
      `expires_at must be an ISO 8601 date or date-time, e.g. 2027-01-31T23:59:59Z; got "${value}" (${why})`,
    );
  });

  it.each(['next week', '2027-1-5', '2027-01-01 10:00', '2027-01-01t10:00z', '2027-01-01T10', '', '1700000000'])(
    'refuses the malformed %j',
    (value) => {
      expect(refusal(() => parseIsoDate(value, 'since'))).toBe(
        `since must be an ISO 8601 date or date-time, e.g. 2027-01-31T23:59:59Z; got "${value}"`,
      );
    },
  );
});

describe('parseScopes', () => {
  it('reads a list, trimming spaces and dropping repeats', () => {
    expect(parseScopes(' read , team:read,read')).toEqual(['read', 'team:read']);
  });

  it.each(['read,,', ',read', 'read, ,team:read', 'read,'])('refuses the empty entry in %j', (value) => {
    expect(refusal(() => parseScopes(value))).toBe(
      `scopes has an empty entry in "${value}"; separate scopes with single commas, e.g. read,team:read`,
    );
  });
});

describe('operations on one key', () => {
  let ctx: OperatorContext;
  let otherKeyId: string;

  beforeAll(async () => {
    await createTables();
    await seedBranches([mainBranch, otherBranch]);
    ctx = createOperatorContext(process.env);
    otherKeyId = (await fixtureKeys.create({ branchId: otherBranch.id, scopes: ['read'] })).record.key_id;
  });
  afterAll(() => ctx.close());

  it('refuse a key of another branch exactly as an unknown id, and change nothing', async () => {
    const unknown = `Unknown key id "key_nothere" for branch "${mainBranch.id}"`;
    await expect(revokeKey(ctx, { branchId: mainBranch.id, keyId: 'key_nothere' })).rejects.toThrow(unknown);
    await expect(revokeKey(ctx, { branchId: mainBranch.id, keyId: otherKeyId })).rejects.toThrow(
      new OperatorError(`Unknown key id "${otherKeyId}" for branch "${mainBranch.id}"`),
    );
    await expect(readUsage(ctx, { branchId: mainBranch.id, keyId: otherKeyId })).rejects.toThrow(
      `Unknown key id "${otherKeyId}" for branch "${mainBranch.id}"`,
    );
    await expect(requireKeyOfBranch(ctx, mainBranch.id, otherKeyId)).rejects.toBeInstanceOf(OperatorError);
    expect((await fixtureKeys.getById(otherKeyId))?.revoked_at).toBeUndefined();
  });

  it('revoke a key of the branch once, then say it was already revoked', async () => {
    const { record } = await createKey(ctx, { branchId: mainBranch.id, scopes: ['read'] });
    const first = await revokeKey(ctx, { branchId: mainBranch.id, keyId: record.key_id });
    expect(first).toMatchObject({ key_id: record.key_id, already_revoked: false, revoked_at: expect.any(String) });
    const again = await revokeKey(ctx, { branchId: mainBranch.id, keyId: record.key_id });
    expect(again).toMatchObject({ already_revoked: true, revoked_at: first.revoked_at });
  });
});
