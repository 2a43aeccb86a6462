/**
 * The Create key form's fields as the console reads them (raw form POSTs with a real session):
 * optional expiry in UTC, scopes from checkboxes, errors shown in the page with the status the
 * operator library's checks give.
 */
import { listKeys } from '../../lib/operator/operations';
import { createOperatorContext } from '../../lib/operator/context';
import { openSession, rawRequest, startEnvironment, type Environment } from './support';

let env: Environment;
const ctx = createOperatorContext(process.env);

beforeAll(async () => {
  env = await startEnvironment();
});
afterAll(async () => {
  await env.close();
  ctx.close();
});

/** Posts the Create key form the way the page does: a fresh form id each time. */
const createKeyForm = async (fields: [string, string][]) => {
  const { cookie, csrf, form } = await openSession(env.console, env.stack.demoBranchId);
  return rawRequest(env.console.origin, `/branches/${env.stack.demoBranchId}/keys`, {
    method: 'POST',
    headers: { cookie, origin: env.console.origin, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams([['_csrf', csrf], ['_form', form], ...fields]).toString(),
  });
};

it('creates a key with several scopes and an expiry read as UTC', async () => {
  const response = await createKeyForm([
    ['name', 'expiring'],
    ['scopes', 'read'],
    ['scopes', 'billing:read'],
    ['expires', '2030-01-31T23:59'],
  ]);
  expect(response.status).toBe(200);
  const key = (await listKeys(ctx, env.stack.demoBranchId)).find((k) => k.name === 'expiring');
  expect(key).toMatchObject({ scopes: ['read', 'billing:read'], expires_at: '2030-01-31T23:59:00.000Z' });
});

const invalid: { fields: [string, string][]; message: string }[] = [
  {
    fields: [
      ['scopes', 'read'],
      ['expires', '2020-01-01T00:00'],
    ],
    message: 'must be in the future',
  },
  {
    fields: [
      ['scopes', 'read'],
      ['expires', 'soon'],
    ],
    message: 'must be an ISO 8601 date',
  },
  { fields: [['scopes', 'admin']], message: 'Unknown scope &quot;admin&quot;' },
  { fields: [['name', 'x']], message: 'needs at least one of' },
];

it.each(invalid)('refuses $fields with 400: "$message"', async ({ fields, message }) => {
  const before = (await listKeys(ctx, env.stack.demoBranchId)).length;
  const response = await createKeyForm(fields);
  expect(response.status).toBe(400);
  expect(response.body).toContain(message);
  expect(response.body).not.toContain('id="new-key-value"');
  expect((await listKeys(ctx, env.stack.demoBranchId)).length).toBe(before);
});

it('refuses to confirm revoking a key that is already revoked', async () => {
  const { record } = await ctx.keys.create({ branchId: env.stack.demoBranchId, scopes: ['read'] });
  await ctx.keys.revoke(record.key_id);
  const { cookie } = await openSession(env.console, env.stack.demoBranchId);
  const response = await rawRequest(
    env.console.origin,
    `/branches/${env.stack.demoBranchId}/keys/${record.key_id}/revoke`,
    { headers: { cookie } },
  );
  expect(response.status).toBe(409);
  expect(response.body).toContain('is revoked');
});

describe('Roll and the audit column', () => {
  const branch = () => env.stack.demoBranchId;
  const api = (key: string) =>
    fetch(`${env.stack.gateway.baseUrl}/v1/branch`, { headers: { authorization: `Bearer ${key}` } });
  /** Posts a key's Roll form the way its confirmation page does. */
  const roll = async (keyId: string, grace: string) => {
    const { cookie, csrf, form } = await openSession(env.console, branch());
    return rawRequest(env.console.origin, `/branches/${branch()}/keys/${keyId}/roll`, {
      method: 'POST',
      headers: { cookie, origin: env.console.origin, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams([
        ['_csrf', csrf],
        ['_form', form],
        ['grace', grace],
      ]).toString(),
    });
  };
  const keysPageHtml = async () => {
    const { cookie } = await openSession(env.console, branch());
    return (await rawRequest(env.console.origin, `/branches/${branch()}/keys`, { headers: { cookie } })).body;
  };

  it('with the default 24h grace: the new key works and the old one keeps working', async () => {
    const { key: old, record } = await ctx.keys.create({ branchId: branch(), scopes: ['read'], name: 'graceful' });
    const response = await roll(record.key_id, '24h');
    expect(response.status).toBe(200);
    const value = /id="new-key-value" class="key-value">(wsk_[0-9A-Za-z]+)</.exec(response.body)![1]!;
    expect((await api(value)).status).toBe(200);
    expect((await api(old)).status).toBe(200);
    const previous = await ctx.keys.getById(record.key_id);
    const grace = Date.parse(previous!.expires_at!) - Date.now();
    expect(grace).toBeGreaterThan(23.9 * 3_600_000);
    expect(grace).toBeLessThanOrEqual(24 * 3_600_000);
    expect(response.body).toContain(`Key ${record.key_id} keeps working until ${previous!.expires_at}`);
  });

  it('refuses to roll a revoked, expired or already rolled key with the library message, and an unknown key with a 404', async () => {
    const revoked = await ctx.keys.create({ branchId: branch(), scopes: ['read'], name: 'revoked one' });
    await ctx.keys.revoke(revoked.record.key_id);
    const expired = await ctx.keys.create({
      branchId: branch(),
      scopes: ['read'],
      name: 'expired one',
      expiresAt: new Date(Date.now() - 60_000),
    });
    const rolled = await ctx.keys.create({ branchId: branch(), scopes: ['read'], name: 'rolled once' });
    expect((await roll(rolled.record.key_id, '0')).status).toBe(200);
    for (const [keyId, state] of [
      [revoked.record.key_id, 'revoked'],
      [expired.record.key_id, 'expired'],
      [rolled.record.key_id, 'rolled'],
    ] as const) {
      const refused = await roll(keyId, '24h');
      expect([keyId, refused.status]).toEqual([keyId, 409]);
      expect(refused.body).toContain(state);
      expect(refused.body).not.toMatch(/id="new-key-value"/);
      // The confirmation page is refused too, with a readable message.
      const { cookie } = await openSession(env.console, branch());
      const page = await rawRequest(env.console.origin, `/branches/${branch()}/keys/${keyId}/roll`, {
        headers: { cookie },
      });
      expect(page.status).toBe(409);
      expect(page.body).toContain('cannot be rolled');
    }
    expect((await roll('key_does_not_exist', '24h')).status).toBe(404);
  });

  it('shows no_ip_allowlist and no_expiry for a plain key, and neither for a fenced key that expires', async () => {
    const plain = await ctx.keys.create({ branchId: branch(), scopes: ['read'], name: 'plain audited' });
    const fenced = await ctx.keys.create({
      branchId: branch(),
      scopes: ['read'],
      name: 'fenced audited',
      allowedIps: ['203.0.113.0/24'],
      expiresAt: new Date(Date.now() + 60 * 86_400_000),
    });
    const html = await keysPageHtml();
    const row = (keyId: string) => {
      const at = html.indexOf(keyId);
      return html.slice(at, html.indexOf('</tr>', at));
    };
    expect(row(plain.record.key_id)).toContain('no_ip_allowlist');
    expect(row(plain.record.key_id)).toContain('no_expiry');
    expect(row(fenced.record.key_id)).not.toContain('no_ip_allowlist');
    expect(row(fenced.record.key_id)).not.toContain('no_expiry');
    expect(row(fenced.record.key_id)).toContain('203.0.113.0/24');
  });
});
