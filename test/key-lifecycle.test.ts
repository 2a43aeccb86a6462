/**
 * Key lifecycle as a caller sees it (docs/decisions.md "Key lifecycle"): IP allowlists matched on
 * API Gateway's source address, `Api-Key-Expires` on every response to a key with an expiry, and
 * rolled keys (the new one works, the old one until its grace period ends), against the real
 * handlers and the embedded DynamoDB.
 */
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { handler as getBranch } from '../functions/get-branch';
import { handler as getProvider } from '../functions/get-payment-provider';
import { hashApiKey } from '../shared/domain/api-key';
import { isAllowedIp, parseAllowlist, parseCidr } from '../shared/domain/cidr';
import { readDynamoDbSettings } from '../shared/config/env';
import { DataStoreUnavailableError } from '../shared/data/data-store-errors';
import { createDocumentClient } from '../shared/data/dynamodb';
import { KeyNotFoundError, KeyNotRollableError } from '../shared/domain/key-record';
import { KeysRepository } from '../shared/data/repositories/keys';
import { otherBranch, mainBranch } from './support/fixtures';
import {
  CHALLENGE,
  createKey,
  expectError,
  fixtureClient,
  fixtureKeys,
  headerOf,
  invoke,
  setUpBranches,
  tableNames,
  usageRecordFor,
} from './support/harness';

let plainKey: string;

beforeAll(async () => {
  ({ key: plainKey } = await setUpBranches());
});

const HOUR = 3_600_000;
const branchFrom = (key: string, sourceIp?: string, headers: Record<string, string> = {}) =>
  invoke(getBranch, { path: '/v1/branch', key, headers, ...(sourceIp ? { sourceIp } : {}) });

describe('IP allowlist', () => {
  it.each([
    ['10.0.0.0/24', '10.0.0.0', 200],
    ['10.0.0.0/24', '10.0.0.255', 200],
    ['10.0.0.0/24', '10.0.1.0', 403],
    ['10.0.0.0/24', '9.255.255.255', 403],
    ['203.0.113.7', '203.0.113.7', 200],
    ['203.0.113.7', '203.0.113.8', 403],
    ['2001:db8::/32', '2001:db8::', 200],
    ['2001:db8::/32', '2001:db8:ffff:ffff:ffff:ffff:ffff:ffff', 200],
    ['2001:db8::/32', '2001:db9::', 403],
    ['2001:db8::/32', '10.0.0.1', 403],
    ['2001:db8::1', '2001:DB8:0:0:0:0:0:1', 200],
    ['10.0.0.0/24', '::ffff:10.0.0.1', 200],
    ['10.0.0.0/24', '::ffff:a00:1', 200],
    ['10.0.0.0/24', '::ffff:10.0.1.1', 403],
    ['0.0.0.0/0', '198.51.100.1', 200],
  ])('list %s, caller %s: %i', async (list, sourceIp, status) => {
    const { key } = await createKey({ allowedIps: parseAllowlist(list) });
    const res = await branchFrom(key, sourceIp);
    if (status === 200) expect(res.statusCode).toBe(200);
    else expectError(res, 403, 'ip_not_allowed');
  });

  it('answers 403 ip_not_allowed without a challenge, and records the call against the key', async () => {
    const { key, record } = await createKey({ allowedIps: ['10.0.0.0/8'] });
    const res = await branchFrom(key, '192.0.2.1');
    expectError(res, 403, 'ip_not_allowed');
    // The key is fine; another token would not help (docs/decisions.md "Key lifecycle").
    expect(headerOf(res, 'www-authenticate')).toBeUndefined();
    expect(await usageRecordFor(res.requestId)).toMatchObject({ key_id: record.key_id, status: 403 });
  });

  it('ignores X-Forwarded-For and the like: only API Gateway sourceIp counts', async () => {
    const { key } = await createKey({ allowedIps: ['10.0.0.0/8'] });
    const spoofed = { 'x-forwarded-for': '10.0.0.1', 'x-real-ip': '10.0.0.1', forwarded: 'for=10.0.0.1' };
    expectError(await branchFrom(key, '192.0.2.1', spoofed), 403, 'ip_not_allowed');
    const honest = await branchFrom(key, '10.1.2.3', { 'x-forwarded-for': '192.0.2.1' });
    expect(honest.statusCode).toBe(200);
  });

  it('comes after revoked and expired, and before the scope check', async () => {
    const revoked = await createKey({ allowedIps: ['10.0.0.1/32'] });
    await fixtureKeys.revoke(revoked.record.key_id);
    expectError(await branchFrom(revoked.key, '192.0.2.1'), 401, 'revoked_api_key');
    const expired = await createKey({ allowedIps: ['10.0.0.1/32'], expiresAt: new Date(Date.now() - 1000) });
    expectError(await branchFrom(expired.key, '192.0.2.1'), 401, 'expired_api_key');
    const noRead = await createKey({ allowedIps: ['10.0.0.1/32'], scopes: ['write'] });
    expectError(await branchFrom(noRead.key, '192.0.2.1'), 403, 'ip_not_allowed');
    const inside = await branchFrom(noRead.key, '10.0.0.1');
    expectError(inside, 403, 'insufficient_scope');
    expect(headerOf(inside, 'www-authenticate')).toBe(CHALLENGE.insufficientScope);
  });

  it('a key without a list is usable from anywhere', async () => {
    expect((await branchFrom(plainKey, '2001:db8::99')).statusCode).toBe(200);
  });

  it('fails closed on an address that is not one and on a stored entry that does not parse', () => {
    expect(isAllowedIp('not-an-ip', ['0.0.0.0/0'])).toBe(false);
    expect(isAllowedIp('10.0.0.1', ['10.0.0.0/99', 'example.com/8'])).toBe(false);
  });
});

describe('parseCidr', () => {
  it.each([
    ['10.0.0.0/8', '10.0.0.0/8'],
    ['10.1.2.3/8', '10.0.0.0/8'],
    [' 192.0.2.1 ', '192.0.2.1/32'],
    ['0.0.0.0/0', '0.0.0.0/0'],
    ['2001:DB8:0:0::1', '2001:db8::1/128'],
    ['2001:db8:abcd::1/32', '2001:db8::/32'],
    ['2001:db8:abcd::1/33', '2001:db8:8000::/33'],
    ['::/0', '::/0'],
    ['::ffff:10.0.0.1/120', '::ffff:10.0.0.0/120'],
  ])('%j → %j', (entry, canonical) => {
    expect(parseCidr(entry)).toBe(canonical);
  });

  it.each([
    '300.1.1.1/8',
    '10.0.0.0/33',
    '::1/129',
    'example.com',
    'localhost/32',
    '10.0.0/8',
    '010.0.0.1',
    '10.0.0.0/',
    '10.0.0.0/08',
    '10.0.0.0/-1',
    '10.0.0.0/8/8',
    'fe80::1%eth0',
    '',
  ])('refuses %j', (entry) => {
    expect(() => parseCidr(entry)).toThrow(/IPv4 or IPv6|prefix length/);
  });

  it('refuses empty entries in a list and drops repeats', () => {
    expect(() => parseAllowlist('10.0.0.1,,10.0.0.2')).toThrow(/empty entry/);
    expect(() => parseAllowlist('10.0.0.1,')).toThrow(/empty entry/);
    expect(parseAllowlist('10.0.0.1, 10.0.0.1/32')).toEqual(['10.0.0.1/32']);
  });
});

describe('Api-Key-Expires', () => {
  it('is on every response to a key that has an expiry, success or error', async () => {
    const expiresAt = new Date(Date.now() + 48 * HOUR);
    const { key } = await createKey({ expiresAt, allowedIps: ['10.0.0.1/32'] });
    const responses = [
      await branchFrom(key, '10.0.0.1'),
      await invoke(getProvider, {
        path: '/v1/payment-providers/pp_nope',
        pathParameters: { id: 'pp_nope' },
        key,
        sourceIp: '10.0.0.1',
      }),
      await branchFrom(key, '192.0.2.1'),
    ];
    expect(responses.map((res) => [res.statusCode, headerOf(res, 'api-key-expires')])).toEqual([
      [200, expiresAt.toISOString()],
      [404, expiresAt.toISOString()],
      [403, expiresAt.toISOString()],
    ]);
  });

  it('is on the 401 of an expired or revoked key that had one', async () => {
    const expiresAt = new Date(Date.now() - 1000);
    const expired = await createKey({ expiresAt });
    expect(headerOf(await branchFrom(expired.key), 'api-key-expires')).toBe(expiresAt.toISOString());
  });

  it('is absent for a key without an expiry, and before a key is found', async () => {
    expect(headerOf(await branchFrom(plainKey), 'api-key-expires')).toBeUndefined();
    const res = await invoke(getBranch, { path: '/v1/branch' });
    expect(res.statusCode).toBe(401);
    expect(headerOf(res, 'api-key-expires')).toBeUndefined();
  });
});

describe('roll', () => {
  /** A key with every setting, plus an attribute no code knows yet: a roll must carry it too. */
  const richKey = async (expiresAt = new Date(Date.now() + 30 * 24 * HOUR)) => {
    const created = await createKey({
      name: 'billing sync',
      scopes: ['read', 'team:read'],
      allowedIps: ['10.0.0.0/8', '2001:db8::/32'],
      expiresAt,
    });
    await fixtureClient.send(
      new UpdateCommand({
        TableName: tableNames.keys,
        Key: { key_hash: hashApiKey(created.key) },
        UpdateExpression: 'SET future_setting = :v, rate_limit = :rl',
        ExpressionAttributeValues: { ':v': { mode: 'strict' }, ':rl': { requests: 100, window_seconds: 60 } },
      }),
    );
    return created;
  };

  it('the new key works, the old key works until the grace ends; both are recorded separately', async () => {
    const old = await richKey();
    const rolled = await fixtureKeys.roll({ keyId: old.record.key_id, branchId: mainBranch.id, graceMs: 24 * HOUR });
    const viaNew = await branchFrom(rolled.key, '10.0.0.1');
    const viaOld = await branchFrom(old.key, '10.0.0.1');
    expect([viaNew.statusCode, viaOld.statusCode]).toEqual([200, 200]);
    expect(headerOf(viaOld, 'api-key-expires')).toBe(rolled.previous.expires_at);
    expect((await usageRecordFor(viaNew.requestId))?.key_id).toBe(rolled.record.key_id);
    expect((await usageRecordFor(viaOld.requestId))?.key_id).toBe(old.record.key_id);
  });

  it('carries branch, name, scopes, allowlist, expiry and any other setting; links both keys', async () => {
    const old = await richKey();
    const now = new Date();
    const { record, previous, key } = await fixtureKeys.roll({
      keyId: old.record.key_id,
      branchId: mainBranch.id,
      graceMs: HOUR,
      now,
    });
    expect(record).toEqual({
      key_id: expect.stringMatching(/^key_/),
      branch_id: mainBranch.id,
      name: 'billing sync',
      scopes: ['read', 'team:read'],
      allowed_ips: ['10.0.0.0/8', '2001:db8::/32'],
      expires_at: old.record.expires_at,
      future_setting: { mode: 'strict' },
      rate_limit: { requests: 100, window_seconds: 60 },
      start: key.slice(0, record.start.length),
      created_at: now.toISOString(),
      rolled_from: old.record.key_id,
      // A new key's first action (its creation) is version 1 (docs/decisions.md "Key activity").
      version: 1,
    });
    expect(record.key_id).not.toBe(old.record.key_id);
    expect(previous).toMatchObject({
      key_id: old.record.key_id,
      rolled_to: record.key_id,
      expires_at: new Date(now.getTime() + HOUR).toISOString(),
    });
    expect(await fixtureKeys.getById(record.key_id)).toEqual(record);
    // The new key is refused outside its inherited allowlist.
    expectError(await branchFrom(key, '192.0.2.1'), 403, 'ip_not_allowed');
  });

  it('after the grace period the old key is refused as expired_api_key', async () => {
    const old = await createKey();
    // Rolled an hour ago with a 30-minute grace period: the grace has ended.
    const rolled = await fixtureKeys.roll({
      keyId: old.record.key_id,
      branchId: mainBranch.id,
      graceMs: HOUR / 2,
      now: new Date(Date.now() - HOUR),
    });
    expectError(await branchFrom(old.key), 401, 'expired_api_key');
    expect((await branchFrom(rolled.key)).statusCode).toBe(200);
  });

  it('grace 0 ends the old key at once', async () => {
    const old = await createKey();
    const rolled = await fixtureKeys.roll({ keyId: old.record.key_id, branchId: mainBranch.id, graceMs: 0 });
    expectError(await branchFrom(old.key), 401, 'expired_api_key');
    expect((await branchFrom(rolled.key)).statusCode).toBe(200);
  });

  it('never makes the old key last longer than it already would', async () => {
    const expiresAt = new Date(Date.now() + HOUR);
    const old = await createKey({ expiresAt });
    const { previous, record } = await fixtureKeys.roll({
      keyId: old.record.key_id,
      branchId: mainBranch.id,
      graceMs: 7 * 24 * HOUR,
    });
    expect([previous.expires_at, record.expires_at]).toEqual([expiresAt.toISOString(), expiresAt.toISOString()]);
  });

  it('refuses revoked, expired and already rolled keys, and keys of another branch', async () => {
    const revoked = await createKey();
    await fixtureKeys.revoke(revoked.record.key_id);
    const expired = await createKey({ expiresAt: new Date(Date.now() - 1000) });
    const rolled = await createKey();
    await fixtureKeys.roll({ keyId: rolled.record.key_id, branchId: mainBranch.id, graceMs: HOUR });
    const roll = (keyId: string, branchId = mainBranch.id) => fixtureKeys.roll({ keyId, branchId, graceMs: HOUR });
    await expect(roll(revoked.record.key_id)).rejects.toMatchObject({ reason: 'revoked' });
    await expect(roll(expired.record.key_id)).rejects.toMatchObject({ reason: 'expired' });
    await expect(roll(rolled.record.key_id)).rejects.toBeInstanceOf(KeyNotRollableError);
    await expect(roll(rolled.record.key_id, otherBranch.id)).rejects.toBeInstanceOf(KeyNotFoundError);
    await expect(roll('key_nope')).rejects.toBeInstanceOf(KeyNotFoundError);
  });

  it('two rolls racing: one wins, the other is refused and leaves no key behind', async () => {
    const old = await createKey({ branchId: otherBranch.id });
    const roll = () => fixtureKeys.roll({ keyId: old.record.key_id, branchId: otherBranch.id, graceMs: HOUR });
    const outcomes = await Promise.allSettled([roll(), roll()]);
    const won = outcomes.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []));
    const lost = outcomes.flatMap((outcome) => (outcome.status === 'rejected' ? [outcome.reason] : []));
    expect(won).toHaveLength(1);
    expect(lost).toEqual([expect.objectContaining({ reason: 'rolled' })]);
    const successors = (await fixtureKeys.listByBranch(otherBranch.id)).filter(
      (key) => key.rolled_from === old.record.key_id,
    );
    expect(successors.map((key) => key.key_id)).toEqual([won[0]?.record.key_id]);
  });
});

describe('roll when the second write fails (a stub on a client of this test injects the fault)', () => {
  /** A repository whose UpdateItem fails: before reaching the database, or after it landed. */
  const faultyKeys = (when: 'before' | 'after') => {
    const client = createDocumentClient(readDynamoDbSettings(process.env));
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName !== 'UpdateItemCommand') return next(args);
        if (when === 'after') await next(args);
        throw Object.assign(new Error('socket hang up'), { name: 'TimeoutError' });
      },
      { step: 'initialize', name: 'injectUpdateFault' },
    );
    return new KeysRepository(client, tableNames.keys);
  };

  it('an answer lost after the write landed is still a roll: the new key is kept and linked', async () => {
    const old = await createKey();
    const rolled = await faultyKeys('after').roll({ keyId: old.record.key_id, branchId: mainBranch.id, graceMs: HOUR });
    expect(rolled.previous.rolled_to).toBe(rolled.record.key_id);
    expect((await branchFrom(rolled.key)).statusCode).toBe(200);
  });

  it('a write that never landed leaves the old key as it was and no new key', async () => {
    const old = await createKey();
    await expect(
      faultyKeys('before').roll({ keyId: old.record.key_id, branchId: mainBranch.id, graceMs: HOUR }),
    ).rejects.toBeInstanceOf(DataStoreUnavailableError);
    expect(await fixtureKeys.getById(old.record.key_id)).toEqual(old.record);
    const successors = (await fixtureKeys.listByBranch(mainBranch.id)).filter(
      (key) => key.rolled_from === old.record.key_id,
    );
    expect(successors).toEqual([]);
    expect((await branchFrom(old.key)).statusCode).toBe(200);
  });
});
