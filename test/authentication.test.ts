import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { generateApiKey, hashApiKey } from '../shared/domain/api-key';
import { handler as getBranch } from '../functions/get-branch';
import { handler as listMembers } from '../functions/list-members';
import { readBearerToken } from '../shared/api/middlewares/authenticate';
import {
  CHALLENGE,
  createKey,
  expectCommonHeaders,
  expectError,
  fixtureKeys,
  headerOf,
  invoke,
  setUpBranches,
  fixtureClient,
  tableNames,
} from './support/harness';

let key: string;
let otherKey: string;

beforeAll(async () => {
  ({ key, otherKey } = await setUpBranches());
});

const call = (authorization?: string | string[]) =>
  invoke(getBranch, { path: '/v1/branch', headers: { authorization } });

describe('readBearerToken', () => {
  it.each([
    ['Bearer abc', 'abc'],
    ['bearer abc', 'abc'],
    ['BEARER abc', 'abc'],
    ['BeArEr abc', 'abc'],
    [' \tBearer \t abc \t', 'abc'],
    ['Bearer a b', 'a b'],
    ['Bearer abc,Bearer def', 'abc,Bearer def'],
  ])('%j gives the token %j', (value, token) => {
    expect(readBearerToken({ authorization: value })).toBe(token);
  });

  it.each([
    undefined,
    '',
    ' ',
    'Bearer',
    'Bearer ',
    'Bearer \t ',
    'Basic dXNlcjpwYXNz',
    'Token abc',
    'Bearerabc',
    'abc',
    'Bearer\nabc',
    'Bearer,abc',
  ])('%j gives no token', (value) => {
    expect(readBearerToken({ authorization: value })).toBeUndefined();
  });

  it('reads only the lower-cased header name API Gateway v2 delivers', () => {
    expect(readBearerToken({ Authorization: 'Bearer abc' })).toBeUndefined();
    expect(readBearerToken(undefined)).toBeUndefined();
  });

  it('takes linear time on a long header (a backtracking pattern took 15 s on 100 KB)', () => {
    const started = performance.now();
    for (const value of [
      `Bearer a${' '.repeat(100_000)}b`,
      `Bearer ${'a '.repeat(50_000)}`,
      `${'B'.repeat(100_000)} x`,
    ]) {
      readBearerToken({ authorization: value });
    }
    // Linear is about a millisecond; a backtracking pattern, seconds: the bound tells them apart on any machine.
    expect(performance.now() - started).toBeLessThan(2_000);
  });
});

describe('a request with a valid key', () => {
  it.each(['Bearer', 'bearer', 'BEARER', 'bEaReR'])('is accepted with the scheme written %s', async (scheme) => {
    const res = await call(`${scheme} ${key}`);
    expect(res.statusCode).toBe(200);
    expectCommonHeaders(res);
    expect(headerOf(res, 'www-authenticate')).toBeUndefined();
  });

  it('is accepted with spaces and tabs around the parts', async () => {
    expect((await call(` \tBearer \t ${key} \t`)).statusCode).toBe(200);
  });

  it('reads the branch the key belongs to, and only that one', async () => {
    expect((await call(`Bearer ${key}`)).json.id).toBe('br_main');
    expect((await call(`Bearer ${otherKey}`)).json.id).toBe('br_other');
  });

  it('is accepted with other scopes besides read', async () => {
    const { key: wide } = await createKey({ scopes: ['read', 'write', 'webhooks', 'team:read', 'billing:read'] });
    expect((await call(`Bearer ${wide}`)).statusCode).toBe(200);
  });
});

describe('401 missing_api_key: no header, or not "Bearer <token>"', () => {
  it.each([
    ['no header', undefined],
    ['an empty header', ''],
    ['"Bearer" alone', 'Bearer'],
    ['"Bearer" and spaces', 'Bearer   '],
    ['Basic credentials', 'Basic dXNlcjpwYXNzd29yZA=='],
    ['another scheme with a real key', 'Token KEY'],
    ['the key with no scheme', 'KEY'],
    ['no space after the scheme', 'BearerKEY'],
  ])('%s', async (_label, value) => {
    const res = await call(value?.replace('KEY', key));
    expectError(res, 401, 'missing_api_key');
    // No token was sent, so no error attribute (RFC 6750 3.1).
    expect(headerOf(res, 'www-authenticate')).toBe(CHALLENGE.noToken);
  });
});

describe('401 invalid_api_key: a token that is not a known key', () => {
  const wellFormedUnknown = generateApiKey();
  const body = wellFormedUnknown.slice(4);
  it.each([
    ['an empty-looking token', 'Bearer ""'],
    ['a short token', 'Bearer wsk_abc'],
    ['a wrong prefix on a valid body', `Bearer sk_l${body}`],
    ['an upper-case prefix', `Bearer WSK_${body}`],
    ['a bad checksum', `Bearer ${wellFormedUnknown.slice(0, -1)}${wellFormedUnknown.endsWith('0') ? '1' : '0'}`],
    ['a truncated key', `Bearer ${wellFormedUnknown.slice(0, -3)}`],
    ['a well-formed key nobody issued', `Bearer ${wellFormedUnknown}`],
    ['two keys joined by a comma (a repeated header)', 'Bearer KEY,Bearer KEY'],
    ['two keys in one header', 'Bearer KEY, KEY'],
    ['a key and more', 'Bearer KEY extra'],
    ['a quoted key', 'Bearer "KEY"'],
    ['the SHA-256 of a real key', 'Bearer HASH'],
  ])('%s', async (_label, value) => {
    const res = await call(value.replaceAll('KEY', key).replace('HASH', hashApiKey(key)));
    expectError(res, 401, 'invalid_api_key');
    expect(headerOf(res, 'www-authenticate')).toBe(CHALLENGE.invalidToken);
  });

  it('two Authorization headers, as API Gateway joins them', async () => {
    const res = await call([`Bearer ${key}`, `Bearer ${otherKey}`]);
    expectError(res, 401, 'invalid_api_key');
  });

  it('a 100 KB header answers quickly with a 401, never a 500', async () => {
    const started = performance.now();
    const res = await call(`Bearer ${key}${' '.repeat(50_000)}x${' '.repeat(50_000)}`);
    expectError(res, 401, 'invalid_api_key');
    expect(performance.now() - started).toBeLessThan(2_000);
  });
});

describe('revoked and expired keys', () => {
  it('401 expired_api_key for a key whose expiry has passed', async () => {
    const { key: expired } = await createKey({ expiresAt: new Date(Date.now() - 1000) });
    const res = await call(`Bearer ${expired}`);
    expectError(res, 401, 'expired_api_key');
    expect(headerOf(res, 'www-authenticate')).toBe(CHALLENGE.invalidToken);
  });

  it('401 revoked_api_key for a revoked key', async () => {
    const { key: revoked, record } = await createKey();
    await fixtureKeys.revoke(record.key_id);
    const res = await call(`Bearer ${revoked}`);
    expectError(res, 401, 'revoked_api_key');
    expect(headerOf(res, 'www-authenticate')).toBe(CHALLENGE.invalidToken);
  });

  it('a key both revoked and expired is reported revoked (revocation is checked first)', async () => {
    const { key: both, record } = await createKey({ expiresAt: new Date(Date.now() - 1000) });
    await fixtureKeys.revoke(record.key_id);
    expectError(await call(`Bearer ${both}`), 401, 'revoked_api_key');
  });

  it('a revocation takes effect on the very next request', async () => {
    const { key: soon, record } = await createKey();
    expect((await invoke(listMembers, { path: '/v1/members', key: soon })).statusCode).toBe(200);
    await fixtureKeys.revoke(record.key_id);
    expectError(await invoke(listMembers, { path: '/v1/members', key: soon }), 401, 'revoked_api_key');
    expectError(await invoke(getBranch, { path: '/v1/branch', key: soon }), 401, 'revoked_api_key');
  });

  it('an expiry takes effect on the very next request: valid 1 ms before expires_at, refused at it', async () => {
    const expiresAt = new Date(Date.now() + 60_000);
    const { key: soon } = await createKey({ expiresAt });
    // Only the clock (Date) is faked, so no sleeping and no race with a slow machine; timers stay real.
    jest.useFakeTimers({
      doNotFake: ['hrtime', 'nextTick', 'performance', 'queueMicrotask', 'setImmediate', 'clearImmediate'],
      advanceTimers: true,
    });
    try {
      jest.setSystemTime(expiresAt.getTime() - 1);
      expect((await call(`Bearer ${soon}`)).statusCode).toBe(200);
      jest.setSystemTime(expiresAt.getTime());
      expectError(await call(`Bearer ${soon}`), 401, 'expired_api_key');
    } finally {
      jest.useRealTimers();
    }
  });

  it('a key whose stored expiry is unreadable is refused as expired (fails closed)', async () => {
    const { key: odd } = await createKey({ expiresAt: new Date(Date.now() + 3_600_000) });
    await fixtureClient.send(
      new UpdateCommand({
        TableName: tableNames.keys,
        Key: { key_hash: hashApiKey(odd) },
        UpdateExpression: 'SET expires_at = :bad',
        ExpressionAttributeValues: { ':bad': 'not a date' },
      }),
    );
    expectError(await call(`Bearer ${odd}`), 401, 'expired_api_key');
  });

  it('a key with a future expiry works', async () => {
    const { key: later } = await createKey({ expiresAt: new Date(Date.now() + 3_600_000) });
    expect((await call(`Bearer ${later}`)).statusCode).toBe(200);
  });
});

describe('403 insufficient_scope', () => {
  it.each([
    [['write']],
    [['webhooks', 'team:read', 'billing:read']],
    [['write', 'webhooks', 'team:read', 'billing:read']],
  ])('a valid key with %j and no read', async (scopes) => {
    const { key: noRead } = await createKey({ scopes: scopes as never });
    for (const res of [
      await call(`Bearer ${noRead}`),
      await invoke(listMembers, { path: '/v1/members', key: noRead }),
    ]) {
      expectError(res, 403, 'insufficient_scope');
      expect(headerOf(res, 'www-authenticate')).toBe(CHALLENGE.insufficientScope);
    }
  });

  it('is checked after expiry: an expired key without read is a 401', async () => {
    const { key: expired } = await createKey({ scopes: ['write'], expiresAt: new Date(Date.now() - 1) });
    expectError(await call(`Bearer ${expired}`), 401, 'expired_api_key');
  });
});
