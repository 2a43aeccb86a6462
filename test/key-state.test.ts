/**
 * One answer to "is this key usable now" (shared/domain/key-state.ts): the function itself, and
 * the API, the CLI and the operator functions the console calls agreeing on every state and at
 * the exact expiry instant, against the embedded DynamoDB.
 */
import { freezeClock } from './support/clock';
import { handler as getBranch } from '../functions/get-branch';
import { keyState, msUntilExpiry, type KeyState } from '../shared/domain/key-state';
import { createOperatorContext } from '../lib/operator/context';
import { createKey as createOperatorKey, disableKey, listKeys, revokeKey, rollKey } from '../lib/operator/keys';
import { runCli } from './support/cli';
import { mainBranch } from './support/fixtures';
import { createKey, expectError, invoke, setUpBranches } from './support/harness';

const T = Date.parse('2027-03-01T12:00:00.000Z');
const at = (ms: number) => new Date(T + ms).toISOString();

describe('keyState', () => {
  it.each<[string, Parameters<typeof keyState>[0], KeyState]>([
    ['no flags', {}, 'active'],
    ['expiry ahead', { expires_at: at(1) }, 'active'],
    ['expiry at this very instant', { expires_at: at(0) }, 'expired'],
    ['expiry passed', { expires_at: at(-1) }, 'expired'],
    ['unreadable expiry (fails closed)', { expires_at: 'soon' }, 'expired'],
    ['revoked', { revoked_at: at(-5) }, 'revoked'],
    ['revoked beats expired and disabled', { revoked_at: at(-5), expires_at: at(-1), disabled_at: at(-9) }, 'revoked'],
    ['expired beats disabled (enabling it would not help)', { expires_at: at(0), disabled_at: at(-9) }, 'expired'],
    ['disabled', { disabled_at: at(-9) }, 'disabled'],
    ['disabled beats grace', { disabled_at: at(-9), rolled_to: 'key_b', expires_at: at(60_000) }, 'disabled'],
    ['rolled, in grace', { rolled_to: 'key_b', expires_at: at(60_000) }, 'grace'],
    ['rolled, grace over', { rolled_to: 'key_b', expires_at: at(0) }, 'expired'],
  ])('%s → %s', (_, key, state) => {
    expect(keyState(key, T)).toBe(state);
    expect(keyState(key, new Date(T))).toBe(state);
  });

  it('msUntilExpiry: undefined without expiry, 0 at the instant, -Infinity when unreadable', () => {
    expect(msUntilExpiry({}, T)).toBeUndefined();
    expect(msUntilExpiry({ expires_at: at(0) }, T)).toBe(0);
    expect(msUntilExpiry({ expires_at: at(1500) }, T)).toBe(1500);
    expect(msUntilExpiry({ expires_at: 'x' }, T)).toBe(Number.NEGATIVE_INFINITY);
  });
});

describe('the API, the CLI and the operator functions agree', () => {
  const ctx = createOperatorContext(process.env);
  const keys: Partial<Record<KeyState, { key: string; keyId: string }>> = {};
  const API_ANSWER: Record<KeyState, string> = {
    active: '200',
    grace: '200',
    disabled: '401 disabled_api_key',
    expired: '401 expired_api_key',
    revoked: '401 revoked_api_key',
  };

  beforeAll(async () => {
    await setUpBranches();
    const branchId = mainBranch.id;
    const make = async () => {
      const { key, record } = await createOperatorKey(ctx, { branchId, scopes: ['read'] });
      return { key, keyId: record.key_id };
    };
    keys.active = await make();
    const toRoll = await make();
    await rollKey(ctx, { branchId, keyId: toRoll.keyId, graceMs: 3_600_000 });
    keys.grace = toRoll;
    keys.disabled = await make();
    await disableKey(ctx, { branchId, keyId: keys.disabled.keyId });
    keys.revoked = await make();
    await revokeKey(ctx, { branchId, keyId: keys.revoked.keyId });
    const expired = await createKey({ expiresAt: new Date(Date.now() - 1000) });
    keys.expired = { key: expired.key, keyId: expired.record.key_id };
  });
  afterAll(() => ctx.close());

  const apiAnswer = async (key: string): Promise<string> => {
    const res = await invoke(getBranch, { path: '/v1/branch', key });
    return res.statusCode === 200 ? '200' : `${res.statusCode} ${res.json.error.code}`;
  };

  it('on every state', async () => {
    const cli = await runCli(['keys', 'list', '--branch', mainBranch.id, '--json']);
    expect(cli.code).toBe(0);
    const cliStatus = new Map((cli.json as { key_id: string; status: string }[]).map((k) => [k.key_id, k.status]));
    const listed = new Map((await listKeys(ctx, mainBranch.id)).map((k) => [k.key_id, k.status]));
    for (const [state, { key, keyId }] of Object.entries(keys) as [KeyState, { key: string; keyId: string }][]) {
      expect({
        state,
        api: await apiAnswer(key),
        cli: cliStatus.get(keyId),
        list: listed.get(keyId),
      }).toEqual({
        state,
        api: API_ANSWER[state],
        cli: state,
        list: state,
      });
    }
  });

  it('at the exact expiry instant: usable 1 ms before, expired at it', async () => {
    const expiresAt = new Date(Date.now() + 60_000);
    const { key, record } = await createKey({ expiresAt });
    const statusAt = async (ms: number) => {
      const now = new Date(ms);
      const listed = (await listKeys(ctx, mainBranch.id, now)).find((k) => k.key_id === record.key_id);
      jest.setSystemTime(ms);
      return { api: await apiAnswer(key), list: listed?.status };
    };
    freezeClock();
    try {
      expect(await statusAt(expiresAt.getTime() - 1)).toEqual({ api: '200', list: 'active' });
      expect(await statusAt(expiresAt.getTime())).toEqual({
        api: '401 expired_api_key',
        list: 'expired',
      });
    } finally {
      jest.useRealTimers();
    }
  });

  it('a disabled key is refused with its own code and WWW-Authenticate challenge', async () => {
    const res = await invoke(getBranch, { path: '/v1/branch', key: keys.disabled!.key });
    expectError(res, 401, 'disabled_api_key');
  });
});
