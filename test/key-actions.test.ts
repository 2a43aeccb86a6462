/**
 * Editing, disabling and enabling keys, and the key activity log, through the operator functions
 * the CLI and the console call, with their effect on the API, against the embedded DynamoDB.
 */
import { userInfo } from 'node:os';
import { handler as getBranch } from '../functions/get-branch';
import { createOperatorContext, type OperatorContext } from '../lib/operator/context';
import { OperatorError } from '../lib/operator/errors';
import { parseAllowedIps, parseIsoDate, parseRateLimitText, parseScopes } from '../lib/operator/input';
import {
  createKey,
  disableKey,
  enableKey,
  listActivity,
  listActivityPage,
  revokeKey,
  rollKey,
  updateKey,
  type KeySettings,
} from '../lib/operator/keys';
import { hashApiKey } from '../shared/domain/api-key';
import { startFaultProxy, type FaultProxy } from './support/fault-proxy';
import { mainBranch, otherBranch } from './support/fixtures';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import {
  expectError,
  FAST_FAILURE_ENV,
  fixtureClient,
  fixtureKeys,
  invoke,
  scanRaw,
  setUpBranches,
  tableNames,
} from './support/harness';

const branchId = mainBranch.id;
let ctx: OperatorContext;

beforeAll(async () => {
  await setUpBranches();
  ctx = createOperatorContext(process.env);
});
afterAll(() => ctx.close());

const newKey = async (extra: KeySettings = {}) => {
  const { key, record } = await createKey(ctx, { branchId, scopes: ['read'], name: 'sync', ...extra });
  return { key, keyId: record.key_id };
};
const callWith = (key: string, sourceIp = '198.51.100.7') => invoke(getBranch, { path: '/v1/branch', key, sourceIp });
const codeOf = (promise: Promise<unknown>) =>
  promise.then(
    () => 'no error',
    (error: unknown) =>
      error instanceof OperatorError ? { code: error.code, field: error.field ?? null } : String(error),
  );
/** As codeOf, for input parsed first (the CLI and the console parse text, then call the library). */
const codeOfParsed = (run: () => Promise<unknown>) => codeOf(Promise.resolve().then(run));

describe('disable and enable', () => {
  it('a disabled key answers 401 disabled_api_key on its next call, and works again once enabled', async () => {
    const { key, keyId } = await newKey();
    expect((await callWith(key)).statusCode).toBe(200);
    const disabled = await disableKey(ctx, { branchId, keyId });
    expect(disabled).toMatchObject({ changed: true, key: { key_id: keyId, disabled_at: expect.any(String) } });
    expectError(await callWith(key), 401, 'disabled_api_key');
    const enabled = await enableKey(ctx, { branchId, keyId });
    expect(enabled.changed).toBe(true);
    expect(enabled.key.disabled_at).toBeUndefined();
    expect((await callWith(key)).statusCode).toBe(200);
  });

  it('changes nothing else, and twice is the same as once', async () => {
    const { keyId } = await newKey({ allowedIps: ['198.51.100.0/24'], rateLimit: { limit: 5, windowSeconds: 1 } });
    const before = await fixtureKeys.getById(keyId);
    await disableKey(ctx, { branchId, keyId });
    expect((await disableKey(ctx, { branchId, keyId })).changed).toBe(false);
    await enableKey(ctx, { branchId, keyId });
    expect((await enableKey(ctx, { branchId, keyId })).changed).toBe(false);
    const after = await fixtureKeys.getById(keyId);
    expect({ ...after, version: 0 }).toEqual({ ...before, version: 0 });
    // Two actions written, two no-ops not.
    expect(after!.version).toBe(before!.version! + 2);
  });

  it('refuses revoked keys and keys of another branch, by code', async () => {
    const { keyId } = await newKey();
    await revokeKey(ctx, { branchId, keyId });
    expect(await codeOf(disableKey(ctx, { branchId, keyId }))).toEqual({ code: 'key_not_changeable', field: null });
    expect(await codeOf(enableKey(ctx, { branchId, keyId }))).toEqual({ code: 'key_not_changeable', field: null });
    const other = await newKey();
    expect(await codeOf(disableKey(ctx, { branchId: otherBranch.id, keyId: other.keyId }))).toEqual({
      code: 'unknown_key',
      field: 'key_id',
    });
    expect(await codeOf(disableKey(ctx, { branchId: 'br_nope', keyId: other.keyId }))).toEqual({
      code: 'unknown_branch',
      field: 'branch',
    });
  });

  it('a disabled key cannot be rolled until it is enabled', async () => {
    const { keyId } = await newKey();
    await disableKey(ctx, { branchId, keyId });
    expect(await codeOf(rollKey(ctx, { branchId, keyId }))).toEqual({ code: 'key_not_changeable', field: null });
  });
});

describe('update', () => {
  it('changes name, scopes, rate limit, allowlist and expiry; the API applies them on the next call', async () => {
    const { key, keyId } = await newKey();
    const expires = new Date(Date.now() + 86_400_000).toISOString();
    const { key: updated, changed } = await updateKey(ctx, {
      branchId,
      keyId,
      name: ' billing ',
      scopes: ['read', 'team:read'],
      rateLimit: { limit: 10, windowSeconds: 60 },
      allowedIps: ['203.0.113.0/24'],
      expiresAt: new Date(expires),
    });
    expect(changed).toBe(true);
    expect(updated).toMatchObject({
      name: 'billing',
      scopes: ['read', 'team:read'],
      rate_limit: '10/min',
      allowed_ips: ['203.0.113.0/24'],
      expires_at: expires,
    });
    expectError(await callWith(key, '198.51.100.7'), 403, 'ip_not_allowed');
    expect((await callWith(key, '203.0.113.9')).statusCode).toBe(200);
    // --no-allow-ip, --no-expires and the default rate limit unset them.
    const cleared = await updateKey(ctx, { branchId, keyId, allowedIps: null, expiresAt: null, rateLimit: null });
    expect(cleared.key).not.toHaveProperty('allowed_ips');
    expect(cleared.key).not.toHaveProperty('expires_at');
    expect(cleared.key).not.toHaveProperty('rate_limit');
    expect((await callWith(key, '198.51.100.7')).statusCode).toBe(200);
  });

  it('an update to the values the key already has writes nothing', async () => {
    const { keyId } = await newKey();
    const before = await fixtureKeys.getById(keyId);
    expect((await updateKey(ctx, { branchId, keyId, name: 'sync', scopes: ['read'] })).changed).toBe(false);
    expect(await fixtureKeys.getById(keyId)).toEqual(before);
  });

  it.each<[string, () => KeySettings, string]>([
    ['a blank name', () => ({ name: '  ' }), 'name'],
    ['a long name', () => ({ name: 'x'.repeat(201) }), 'name'],
    ['read,admin', () => ({ scopes: parseScopes('read,admin') }), 'scopes'],
    ['no scope', () => ({ scopes: [] }), 'scopes'],
    ['rate limit lots', () => ({ rateLimit: parseRateLimitText('lots') }), 'rate_limit'],
    ['rate limit 0/s', () => ({ rateLimit: { limit: 0, windowSeconds: 1 } }), 'rate_limit'],
    ['10.0.0.0/33', () => ({ allowedIps: parseAllowedIps('10.0.0.0/33') }), 'allowed_ips'],
    ['an expiry past', () => ({ expiresAt: parseIsoDate('2020-01-01T00:00:00Z', 'expires_at') }), 'expires_at'],
    ['an expiry of tomorrow', () => ({ expiresAt: parseIsoDate('tomorrow', 'expires_at') }), 'expires_at'],
    ['nothing', () => ({}), 'key'],
  ])('refuses %s with invalid_input on its field, before writing', async (_, input, field) => {
    const { keyId } = await newKey();
    const before = await fixtureKeys.getById(keyId);
    expect(await codeOfParsed(() => updateKey(ctx, { branchId, keyId, ...input() }))).toEqual({
      code: 'invalid_input',
      field,
    });
    // The library names data fields, never a CLI option: the CLI and the console name them their way.
    const message = await Promise.resolve()
      .then(() => updateKey(ctx, { branchId, keyId, ...input() }))
      .catch((error: Error) => error.message);
    expect(message).not.toMatch(/--[a-z]/);
    expect(await fixtureKeys.getById(keyId)).toEqual(before);
  });

  it('refuses revoked, expired and rolled keys', async () => {
    const revoked = await newKey();
    await revokeKey(ctx, { branchId, keyId: revoked.keyId });
    const rolled = await newKey();
    await rollKey(ctx, { branchId, keyId: rolled.keyId });
    const expired = await fixtureKeys.create({ branchId, scopes: ['read'], expiresAt: new Date(Date.now() - 1) });
    for (const keyId of [revoked.keyId, rolled.keyId, expired.record.key_id]) {
      expect(await codeOf(updateKey(ctx, { branchId, keyId, name: 'x' }))).toEqual({
        code: 'key_not_changeable',
        field: null,
      });
    }
  });
});

describe('activity', () => {
  it('records every action with the OS user, the time and what changed, newest first; never a key value', async () => {
    const { key, keyId } = await newKey();
    await updateKey(ctx, { branchId, keyId, name: 'renamed', rateLimit: { limit: 5, windowSeconds: 1 } });
    await disableKey(ctx, { branchId, keyId });
    await enableKey(ctx, { branchId, keyId });
    const { record } = await rollKey(ctx, { branchId, keyId, graceMs: 3_600_000 });
    await revokeKey(ctx, { branchId, keyId });
    const entries = await listActivity(ctx, { branchId, keyId });
    expect(entries.map((entry) => entry.action)).toEqual([
      'revoked',
      'rolled',
      'enabled',
      'disabled',
      'updated',
      'created',
    ]);
    const user = userInfo().username;
    for (const entry of entries) expect(entry).toMatchObject({ actor: user, branch_id: branchId, key_id: keyId });
    expect(entries[4]!.changes).toEqual({
      name: { before: 'sync', after: 'renamed' },
      rate_limit: { before: null, after: '5/s' },
    });
    expect(entries[4]!.key_name).toBe('renamed');
    expect(entries[1]!.details).toEqual({ rolled_to: record.key_id });
    expect(entries[2]!.changes).toEqual({ disabled_at: { before: expect.any(String), after: null } });
    // The new key's creation is in the branch's log, linked to the old one.
    const branchLog = await listActivity(ctx, { branchId });
    expect(branchLog.find((e) => e.key_id === record.key_id)).toMatchObject({
      action: 'created',
      details: { rolled_from: keyId },
    });
    const stored = JSON.stringify(await scanRaw(tableNames.activity));
    expect(stored).not.toContain(key);
    expect(stored).not.toContain(key.slice(10, 40));
  });

  it('keeps to its limit and to the branch', async () => {
    const { keyId } = await newKey();
    await disableKey(ctx, { branchId, keyId });
    expect(await listActivity(ctx, { branchId, limit: 1 })).toHaveLength(1);
    expect(await listActivity(ctx, { branchId: otherBranch.id, limit: 1000 })).toEqual(
      expect.not.arrayContaining([expect.objectContaining({ key_id: keyId })]),
    );
    expect(await codeOf(listActivity(ctx, { branchId, limit: 1001 }))).toEqual({
      code: 'invalid_input',
      field: 'limit',
    });
    expect(await codeOf(listActivity(ctx, { branchId: otherBranch.id, keyId }))).toEqual({
      code: 'unknown_key',
      field: 'key_id',
    });
  });
});

describe('activity pages', () => {
  it('pages older and newer by position, newest first, and refuses a position it did not give', async () => {
    const { keyId } = await newKey();
    for (let i = 0; i < 2; i += 1) {
      await disableKey(ctx, { branchId, keyId });
      await enableKey(ctx, { branchId, keyId });
    }
    const all = (await listActivity(ctx, { branchId, keyId })).map((entry) => entry.action);
    expect(all).toEqual(['enabled', 'disabled', 'enabled', 'disabled', 'created']);
    const actions = (page: { entries: { action: string }[] }) => page.entries.map((entry) => entry.action);

    const first = await listActivityPage(ctx, { branchId, keyId, limit: 2 });
    expect([actions(first), first.newer]).toEqual([all.slice(0, 2), undefined]);
    const second = await listActivityPage(ctx, { branchId, keyId, limit: 2, before: first.older! });
    expect(actions(second)).toEqual(all.slice(2, 4));
    const third = await listActivityPage(ctx, { branchId, keyId, limit: 2, before: second.older! });
    expect([actions(third), third.older]).toEqual([all.slice(4), undefined]);
    // And back, a page at a time, to the newest (which has no newer page).
    const backToSecond = await listActivityPage(ctx, { branchId, keyId, limit: 2, after: third.newer! });
    expect(backToSecond).toEqual(second);
    const backToFirst = await listActivityPage(ctx, { branchId, keyId, limit: 2, after: second.newer! });
    expect(backToFirst).toEqual(first);

    for (const position of ['not a position', `${first.older}x y`, 'x'.repeat(400)]) {
      expect(await codeOf(listActivityPage(ctx, { branchId, keyId, before: position }))).toEqual({
        code: 'invalid_input',
        field: 'position',
      });
    }
  });
});

describe('an action and its activity entry cannot disagree (a fault proxy in front of DynamoDB injects the faults)', () => {
  let proxy: FaultProxy;
  let faulty: OperatorContext;

  beforeAll(async () => {
    proxy = await startFaultProxy(process.env.DYNAMODB_ENDPOINT!);
    faulty = createOperatorContext({ ...process.env, ...FAST_FAILURE_ENV, DYNAMODB_ENDPOINT: proxy.endpoint });
  });
  afterAll(async () => {
    faulty.close();
    await proxy.close();
  });
  afterEach(() => proxy.clear());

  it('the activity table failing: the action stands, and its entry is in the log at the next read', async () => {
    const { key, keyId } = await newKey();
    proxy.inject('PutItem', { kind: 'error' }); // every PutItem: only the activity copy uses one here
    const result = await disableKey(faulty, { branchId, keyId });
    expect(result.changed).toBe(true);
    expect(proxy.requests.some((r) => r.operation === 'PutItem' && r.outcome === 'error')).toBe(true);
    expectError(await callWith(key), 401, 'disabled_api_key');
    // While the activity table still fails, reading the log fails rather than leave the action out.
    await expect(listActivity(faulty, { branchId, keyId })).rejects.toThrow();
    proxy.clear();
    const entries = await listActivity(faulty, { branchId, keyId });
    expect(entries.map((entry) => entry.action)).toEqual(['disabled', 'created']);
  });

  it('an entry whose copy failed waits on the key; the next action adds its own and both are copied', async () => {
    const { keyId } = await newKey();
    proxy.inject('PutItem', { kind: 'error' });
    await disableKey(faulty, { branchId, keyId });
    proxy.clear();
    await enableKey(faulty, { branchId, keyId });
    const raw = await scanRaw(tableNames.activity);
    const actions = raw.filter((item) => item.key_id?.S === keyId).map((item) => item.action?.S);
    expect(actions.sort()).toEqual(['created', 'disabled', 'enabled']);
  });

  it('an action costs six DynamoDB calls: branch, key (index, then consistent), the write, the copy, its clearing', async () => {
    const { keyId } = await newKey();
    proxy.resetLog();
    await disableKey(faulty, { branchId, keyId });
    expect(proxy.operations()).toEqual(['GetItem', 'Query', 'GetItem', 'UpdateItem', 'PutItem', 'UpdateItem']);
  });

  it('the key write failing: nothing changes and no entry is written', async () => {
    const { key, keyId } = await newKey();
    proxy.inject('UpdateItem', { kind: 'error' });
    await expect(disableKey(faulty, { branchId, keyId })).rejects.toThrow();
    proxy.clear();
    expect((await callWith(key)).statusCode).toBe(200);
    expect((await listActivity(ctx, { branchId, keyId })).map((entry) => entry.action)).toEqual(['created']);
  });
});

describe('concurrent actions and keys from before activity', () => {
  it('actions racing on one key all land, each with its own entry, none overwritten', async () => {
    const { keyId } = await newKey();
    const results = await Promise.all([
      updateKey(ctx, { branchId, keyId, name: 'racing' }),
      disableKey(ctx, { branchId, keyId }),
      updateKey(ctx, { branchId, keyId, rateLimit: { limit: 7, windowSeconds: 1 } }),
    ]);
    expect(results.map((result) => result.changed)).toEqual([true, true, true]);
    const key = await fixtureKeys.getById(keyId);
    expect(key).toMatchObject({ name: 'racing', rate_limit: '7/s', disabled_at: expect.any(String), version: 4 });
    const entries = await listActivity(ctx, { branchId, keyId });
    expect(entries.map((entry) => entry.activity_id).sort()).toEqual([1, 2, 3, 4].map((v) => `${keyId}#${v}`));
  });

  it('a key stored before versions and activity existed takes actions as well', async () => {
    const { key, keyId } = await newKey();
    const [item] = (await scanRaw(tableNames.keys)).filter((stored) => stored.key_id?.S === keyId);
    await fixtureClient.send(
      new UpdateCommand({
        TableName: tableNames.keys,
        Key: { key_hash: item!.key_hash!.S! },
        UpdateExpression: 'REMOVE version, outbox',
      }),
    );
    expect((await disableKey(ctx, { branchId, keyId })).key.version).toBe(1);
    expectError(await callWith(key), 401, 'disabled_api_key');
    expect((await listActivity(ctx, { branchId, keyId }))[0]).toMatchObject({
      action: 'disabled',
      activity_id: `${keyId}#1`,
    });
  });
});

describe('a leaked key (the secret-scanning handler revokes through the repository)', () => {
  it('is revoked with a leaked entry carrying the report, once', async () => {
    const { key, keyId } = await newKey();
    const leak = { url: 'https://github.com/o/r/blob/x/.env', source: 'content' };
    await fixtureKeys.revokeLeaked(hashApiKey(key), leak, 'github-secret-scanning');
    await fixtureKeys.revokeLeaked(hashApiKey(key), leak, 'github-secret-scanning');
    expectError(await callWith(key), 401, 'revoked_api_key');
    const entries = await listActivity(ctx, { branchId, keyId });
    expect(entries.map((entry) => entry.action)).toEqual(['leaked', 'created']);
    expect(entries[0]).toMatchObject({ actor: 'github-secret-scanning', details: leak });
  });
});
