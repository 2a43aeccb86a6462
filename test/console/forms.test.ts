/**
 * The Create key form's fields as the console reads them (raw form POSTs with a real session):
 * optional expiry (UTC, or in the zone the page sends), scopes from checkboxes, errors shown in
 * the page with the status the operator library's checks give.
 */
import { listKeys } from '../../lib/operator/keys';
import { openSession, rawRequest, useEnvironment } from './support';

const setup = useEnvironment();
const { ctx } = setup;

/** Posts the Create key form the way the page does: a fresh form id each time. */
const createKeyForm = async (fields: [string, string][]) => {
  const { cookie, csrf, form } = await openSession(setup.env.console, setup.env.stack.demoBranchId);
  return rawRequest(setup.env.console.origin, `/branches/${setup.env.stack.demoBranchId}/keys`, {
    method: 'POST',
    headers: { cookie, origin: setup.env.console.origin, 'content-type': 'application/x-www-form-urlencoded' },
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
  const key = (await listKeys(ctx, setup.env.stack.demoBranchId)).find((k) => k.name === 'expiring');
  expect(key).toMatchObject({ scopes: ['read', 'billing:read'], expires_at: '2030-01-31T23:59:00.000Z' });
});

it.each([
  ['Europe/Paris', '2030-01-31T09:00', '2030-01-31T08:00:00.000Z'],
  ['Europe/Paris', '2030-07-01T09:00', '2030-07-01T07:00:00.000Z'],
  ['Asia/Kolkata', '2030-01-31T02:00', '2030-01-30T20:30:00.000Z'],
  ['UTC', '2030-01-31T09:00', '2030-01-31T09:00:00.000Z'],
])('reads an expiry typed in the zone its page sends (%s, %s)', async (zone, typed, stored) => {
  const name = `expiring ${zone} ${typed}`;
  const response = await createKeyForm([
    ['name', name],
    ['scopes', 'read'],
    ['expires', typed],
    ['zone', zone],
  ]);
  expect(response.status).toBe(200);
  const key = (await listKeys(ctx, setup.env.stack.demoBranchId)).find((k) => k.name === name);
  expect(key?.expires_at).toBe(stored);
});

it('refuses a time zone that does not exist with a 400', async () => {
  const response = await createKeyForm([
    ['scopes', 'read'],
    ['expires', '2030-01-31T09:00'],
    ['zone', 'Mars/Olympus'],
  ]);
  expect(response.status).toBe(400);
  expect(response.body).toContain('No time zone');
});

const invalid: { fields: [string, string][]; message: string; input?: string }[] = [
  {
    fields: [
      ['scopes', 'read'],
      ['expires', '2020-01-01T00:00'],
    ],
    message: 'Expires must be in the future',
    input: 'key-expires',
  },
  {
    fields: [
      ['scopes', 'read'],
      ['expires', 'soon'],
    ],
    message: 'Expires must be an ISO 8601 date',
    input: 'key-expires',
  },
  { fields: [['scopes', 'admin']], message: 'Unknown scope &quot;admin&quot;', input: 'key-scopes' },
  { fields: [['name', 'x']], message: 'Scopes needs at least one of', input: 'key-scopes' },
  {
    fields: [
      ['scopes', 'read'],
      ['allow_ips', '300.1.1.1/8'],
    ],
    message: 'Allowed IPs:',
    input: 'key-allow-ips',
  },
  {
    fields: [
      ['scopes', 'read'],
      ['rate_limit', 'lots'],
    ],
    message: 'Rate limit:',
    input: 'key-rate-limit',
  },
];

it.each(invalid)('refuses $fields with 400: "$message" next to its field', async ({ fields, message, input }) => {
  const before = (await listKeys(ctx, setup.env.stack.demoBranchId)).length;
  const response = await createKeyForm(fields);
  expect(response.status).toBe(400);
  expect(response.body).not.toContain('id="new-key-value"');
  expect((await listKeys(ctx, setup.env.stack.demoBranchId)).length).toBe(before);
  // The message is described-by target of the field, which is marked invalid and takes the focus.
  const error = new RegExp(`<small id="${input}-error" class="field-error">([^<]*)</small>`).exec(response.body);
  expect(error?.[1]).toContain(message);
  const field = new RegExp(`<input[^>]*id="${input}(?:"|-[^>]*)[^>]*>`).exec(response.body)?.[0] ?? '';
  expect(field).toContain('aria-invalid="true"');
  expect(field).toContain(`aria-describedby="${input}-error"`);
  expect(field).toContain('autofocus');
  expect(response.body.match(/autofocus/g)).toHaveLength(1);
});

it('refuses to confirm revoking a key that is already revoked', async () => {
  const { record } = await ctx.keys.create({ branchId: setup.env.stack.demoBranchId, scopes: ['read'] });
  await ctx.keys.revoke(record.key_id);
  const { cookie } = await openSession(setup.env.console, setup.env.stack.demoBranchId);
  const response = await rawRequest(
    setup.env.console.origin,
    `/branches/${setup.env.stack.demoBranchId}/keys/${record.key_id}/revoke`,
    { headers: { cookie } },
  );
  expect(response.status).toBe(409);
  expect(response.body).toContain('is revoked');
});

describe('Roll and the audit column', () => {
  const branch = () => setup.env.stack.demoBranchId;
  const api = (key: string) =>
    fetch(`${setup.env.stack.gateway.baseUrl}/v1/branch`, { headers: { authorization: `Bearer ${key}` } });
  /** Posts a key's Roll form the way its confirmation page does. */
  const roll = async (keyId: string, grace: string) => {
    const { cookie, csrf, form } = await openSession(setup.env.console, branch());
    return rawRequest(setup.env.console.origin, `/branches/${branch()}/keys/${keyId}/roll`, {
      method: 'POST',
      headers: { cookie, origin: setup.env.console.origin, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams([
        ['_csrf', csrf],
        ['_form', form],
        ['grace', grace],
      ]).toString(),
    });
  };
  const keysPageHtml = async () => {
    const { cookie } = await openSession(setup.env.console, branch());
    return (await rawRequest(setup.env.console.origin, `/branches/${branch()}/keys`, { headers: { cookie } })).body;
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
    // The end of the grace period is a time like every other: the reader's zone, the UTC instant on hover.
    expect(response.body).toMatch(
      new RegExp(`Key ${record.key_id} keeps working until <time\\s+datetime="${previous!.expires_at}"`),
    );
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
      const { cookie } = await openSession(setup.env.console, branch());
      const page = await rawRequest(setup.env.console.origin, `/branches/${branch()}/keys/${keyId}/roll`, {
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
