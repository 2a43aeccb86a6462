/**
 * The key lifecycle commands end to end (`keys create --allow-ip`, `keys roll`, `keys audit`,
 * `keys list`), each in a child process against this file's tables on the embedded DynamoDB.
 */
import { handler as getBranch } from '../../functions/get-branch';
import { isWellFormedApiKey } from '../../shared/domain/api-key';
import { runCli } from '../support/cli';
import { mainBranch, otherBranch } from '../support/fixtures';
import { createKey, expectError, fixtureKeys, invoke, setUpBranches } from '../support/harness';

const BRANCH = mainBranch.id;

beforeAll(async () => {
  await setUpBranches();
});

/** Exit 1 with exactly one line on stderr (npm's own warnings aside), never a stack trace. */
const expectOneLineError = (result: { code: number; stderr: string; stdout: string }): string => {
  const lines = result.stderr.split('\n').filter((line) => line && !line.includes('nodedir'));
  expect({ code: result.code, lines: lines.length, stdout: result.stdout }).toEqual({ code: 1, lines: 1, stdout: '' });
  expect(lines[0]).toMatch(/^error: /);
  return lines[0] ?? '';
};

describe('keys create --allow-ip', () => {
  it('stores canonical CIDR entries, IPv4 and IPv6, a bare address as one host', async () => {
    const result = await runCli([
      'keys',
      'create',
      '--branch',
      BRANCH,
      '--scopes',
      'read',
      '--allow-ip',
      '203.0.113.7, 10.1.2.3/8,2001:DB8::/32',
      '--json',
    ]);
    expect(result.code).toBe(0);
    expect(result.json.allowed_ips).toEqual(['203.0.113.7/32', '10.0.0.0/8', '2001:db8::/32']);
    expect((await fixtureKeys.getById(result.json.key_id))?.allowed_ips).toEqual(result.json.allowed_ips);
    expectError(
      await invoke(getBranch, { path: '/v1/branch', key: result.json.key, sourceIp: '192.0.2.1' }),
      403,
      'ip_not_allowed',
    );
  });

  it.each([
    '300.1.1.1/8',
    '10.0.0.0/33',
    '::1/129',
    'example.com',
    '10.0.0.1,,10.0.0.2',
    '10.0.0.1,',
    '',
    '10.0.0.0/8x',
    'fe80::1%eth0',
  ])('refuses %j: exit 1, one line, no key written', async (list) => {
    const before = (await fixtureKeys.listByBranch(otherBranch.id)).length;
    const result = await runCli(['keys', 'create', '--branch', otherBranch.id, '--scopes', 'read', '--allow-ip', list]);
    expect(expectOneLineError(result)).toContain('--allow-ip');
    expect(await fixtureKeys.listByBranch(otherBranch.id)).toHaveLength(before);
  });
});

describe('keys roll', () => {
  it('prints the new key once and keeps the old one until the grace ends', async () => {
    const old = await createKey({ name: 'sync', scopes: ['read', 'team:read'] });
    const result = await runCli(['keys', 'roll', old.record.key_id, '--branch', BRANCH, '--grace', '15m']);
    expect(result.code).toBe(0);
    const printed = result.stdout
      .split('\n')
      .map((line) => line.trim())
      .filter(isWellFormedApiKey);
    expect(printed).toHaveLength(1);
    expect(result.stdout).toContain(`Rolled key ${old.record.key_id} to key_`);
    const [{ statusCode: viaNew }, { statusCode: viaOld }] = [
      await invoke(getBranch, { path: '/v1/branch', key: printed[0] }),
      await invoke(getBranch, { path: '/v1/branch', key: old.key }),
    ];
    expect([viaNew, viaOld]).toEqual([200, 200]);
    const stored = await fixtureKeys.getById(old.record.key_id);
    const ends = Date.parse(stored?.expires_at ?? '') - Date.now();
    expect(ends).toBeGreaterThan(13 * 60_000);
    expect(ends).toBeLessThanOrEqual(15 * 60_000);
  });

  it('--grace 0 ends the old key now; --json has the new key and the old one', async () => {
    const old = await createKey();
    const result = await runCli(['keys', 'roll', old.record.key_id, '--branch', BRANCH, '--grace', '0', '--json']);
    expect(result.code).toBe(0);
    expect(result.json).toMatchObject({ rolled_from: old.record.key_id, previous: { key_id: old.record.key_id } });
    expect(result.json.previous.rolled_to).toBe(result.json.key_id);
    expectError(await invoke(getBranch, { path: '/v1/branch', key: old.key }), 401, 'expired_api_key');
    expect((await invoke(getBranch, { path: '/v1/branch', key: result.json.key })).statusCode).toBe(200);
  });

  it("refuses revoked, expired and already rolled keys, another branch's key and bad durations", async () => {
    const revoked = await createKey();
    await fixtureKeys.revoke(revoked.record.key_id);
    const expired = await createKey({ expiresAt: new Date(Date.now() - 1000) });
    const rolled = await createKey();
    const next = await fixtureKeys.roll({ keyId: rolled.record.key_id, branchId: BRANCH, graceMs: 60_000 });
    const roll = (keyId: string, ...rest: string[]) => runCli(['keys', 'roll', keyId, '--branch', BRANCH, ...rest]);
    expect(expectOneLineError(await roll(revoked.record.key_id))).toContain('it is revoked');
    expect(expectOneLineError(await roll(expired.record.key_id))).toContain('it has expired');
    expect(expectOneLineError(await roll(rolled.record.key_id))).toContain(`to ${next.record.key_id}`);
    const foreign = await createKey({ branchId: otherBranch.id });
    expect(expectOneLineError(await roll(foreign.record.key_id))).toBe(
      `error: Unknown key id "${foreign.record.key_id}" for branch "${BRANCH}"`,
    );
    expect(expectOneLineError(await roll('key_nope'))).toBe(`error: Unknown key id "key_nope" for branch "${BRANCH}"`);
    for (const grace of ['1w', '-1h', '24', '366d', '']) {
      expect(expectOneLineError(await roll(foreign.record.key_id, '--grace', grace))).toContain('--grace');
    }
  });
});

describe('keys list and keys audit', () => {
  it('list shows the allowlist and the roll links', async () => {
    const old = await createKey({ branchId: otherBranch.id, allowedIps: ['10.0.0.0/8'] });
    const next = await fixtureKeys.roll({ keyId: old.record.key_id, branchId: otherBranch.id, graceMs: 60_000 });
    const text = await runCli(['keys', 'list', '--branch', otherBranch.id]);
    expect(text.code).toBe(0);
    const row = (id: string) => text.stdout.split('\n').find((line) => line.startsWith(id)) ?? '';
    expect(row(old.record.key_id)).toMatch(new RegExp(`10\\.0\\.0\\.0/8 +to ${next.record.key_id}$`));
    expect(row(next.record.key_id)).toMatch(new RegExp(`10\\.0\\.0\\.0/8 +from ${old.record.key_id}$`));
    expect(text.stdout.split('\n')[0]).toMatch(/ALLOWED IPS +ROLLED$/);
  });

  it('audit prints findings per active key, as text and JSON', async () => {
    const { record } = await createKey({ branchId: otherBranch.id, scopes: ['read', 'write'] });
    const json = await runCli(['keys', 'audit', '--branch', otherBranch.id, '--json']);
    expect(json.code).toBe(0);
    const audit = json.json.keys.find((one: { key_id: string }) => one.key_id === record.key_id);
    expect(audit.findings.map((finding: { code: string }) => finding.code)).toEqual(['no_expiry', 'no_ip_allowlist']);
    const text = await runCli(['keys', 'audit', '--branch', otherBranch.id]);
    expect(text.stdout).toContain(`${record.name} (${record.key_id}, ${record.start}…) last used -`);
    expect(text.stdout).toMatch(/ {2}no_ip_allowlist +usable from any IP address/);
    expectOneLineError(await runCli(['keys', 'audit', '--branch', 'br_nope']));
  });
});
