/**
 * Edit, Disable, Enable and the Activity page over raw HTTP with a real session, against the
 * local environment: each change takes effect on the API's next call, is refused by code (not
 * by message) where the key's state forbids it, and shows on the Activity page with who did it.
 */
import { postForm, rawRequest, sessionCookie, useEnvironment } from './support';

const setup = useEnvironment();
const { ctx } = setup;

const branch = () => setup.env.stack.demoBranchId;
const api = async (key: string) => {
  const response = await fetch(`${setup.env.stack.gateway.baseUrl}/v1/branch`, {
    headers: { authorization: `Bearer ${key}` },
  });
  const body = (await response.json()) as { error?: { code: string } };
  return [response.status, body.error?.code ?? 'ok'] as const;
};
const get = async (path: string) =>
  rawRequest(setup.env.console.origin, path, { headers: { cookie: await sessionCookie(setup.env.console) } });
const keyUrl = (keyId: string, action: string) => `/branches/${branch()}/keys/${keyId}/${action}`;
const text = (body: string) => body.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ');

it('disables a key after a confirmation (401 disabled_api_key), enables it again, and says so on the keys page', async () => {
  const { key, record } = await ctx.keys.create({ branchId: branch(), scopes: ['read'], name: 'pausable' });
  const confirm = await get(keyUrl(record.key_id, 'disable'));
  expect(confirm.status).toBe(200);
  expect(text(confirm.body)).toContain('answer 401 disabled_api_key');
  expect(await api(key)).toEqual([200, 'ok']); // asking is not disabling

  const disabled = await postForm(setup.env.console, branch(), keyUrl(record.key_id, 'disable'), []);
  expect(disabled.status).toBe(303);
  expect(disabled.headers.location).toBe(`/branches/${branch()}/keys?done=disabled&key=${record.key_id}`);
  expect(await api(key)).toEqual([401, 'disabled_api_key']);
  const list = await get(disabled.headers.location!);
  expect(text(list.body)).toContain(`Key “pausable” (${record.key_id}) is disabled`);
  // A disabled key offers Enable, not Disable or Roll.
  expect(list.body).toContain(`aria-label="Enable key pausable (${record.key_id})"`);
  expect(list.body).not.toContain(`aria-label="Disable key pausable (${record.key_id})"`);
  expect(list.body).not.toContain(`aria-label="Roll key pausable (${record.key_id})"`);

  expect((await postForm(setup.env.console, branch(), keyUrl(record.key_id, 'enable'), [])).status).toBe(303);
  expect(await api(key)).toEqual([200, 'ok']);
});

it('edits name, scopes, rate limit, allowlist and expiry; the API applies them on the next call', async () => {
  const { key, record } = await ctx.keys.create({ branchId: branch(), scopes: ['read'], name: 'editable' });
  const form = await get(keyUrl(record.key_id, 'edit'));
  expect(form.status).toBe(200);
  expect(form.body).toContain('value="editable"');

  const saved = await postForm(setup.env.console, branch(), keyUrl(record.key_id, 'edit'), [
    ['name', 'edited'],
    ['scopes', 'read'],
    ['scopes', 'billing:read'],
    ['expires', '2031-05-01T12:00'],
    ['allow_ips', '203.0.113.0/24'],
    ['rate_limit', '5/min'],
  ]);
  expect(saved.status).toBe(303);
  expect(await ctx.keys.getById(record.key_id)).toMatchObject({
    name: 'edited',
    scopes: ['read', 'billing:read'],
    expires_at: '2031-05-01T12:00:00.000Z',
    allowed_ips: ['203.0.113.0/24'],
    rate_limit: '5/min',
  });
  expect(await api(key)).toEqual([403, 'ip_not_allowed']); // the test calls from 127.0.0.1

  // Empty fields clear: any IP, the default rate, no expiry.
  await postForm(setup.env.console, branch(), keyUrl(record.key_id, 'edit'), [
    ['name', 'edited'],
    ['scopes', 'read'],
    ['expires', ''],
    ['allow_ips', ''],
    ['rate_limit', ''],
  ]);
  const cleared = await ctx.keys.getById(record.key_id);
  expect([cleared?.expires_at, cleared?.allowed_ips, cleared?.rate_limit, cleared?.scopes]).toEqual([
    undefined,
    undefined,
    undefined,
    ['read'],
  ]);
  expect(await api(key)).toEqual([200, 'ok']);
});

it('shows an edit the library refuses next to its field, keeping what was typed, and changes nothing', async () => {
  const { record } = await ctx.keys.create({ branchId: branch(), scopes: ['read'], name: 'stays' });
  const refused = await postForm(setup.env.console, branch(), keyUrl(record.key_id, 'edit'), [
    ['name', 'renamed'],
    ['scopes', 'read'],
    ['rate_limit', 'fast'],
  ]);
  expect(refused.status).toBe(400);
  expect(refused.body).toMatch(/<small id="key-rate-limit-error" class="field-error">Rate limit:/);
  expect(refused.body).toContain('value="renamed"');
  expect((await ctx.keys.getById(record.key_id))?.name).toBe('stays');
});

it('refuses to edit, disable or enable a revoked key (409), and an unknown key or one of another branch (404)', async () => {
  const { record } = await ctx.keys.create({ branchId: branch(), scopes: ['read'], name: 'gone' });
  await ctx.keys.revoke(record.key_id);
  for (const action of ['disable', 'enable']) {
    expect((await postForm(setup.env.console, branch(), keyUrl(record.key_id, action), [])).status).toBe(409);
    expect((await get(keyUrl(record.key_id, action))).status).toBe(409);
  }
  const edit = await postForm(setup.env.console, branch(), keyUrl(record.key_id, 'edit'), [
    ['name', 'x'],
    ['scopes', 'read'],
  ]);
  expect(edit.status).toBe(409);
  expect((await postForm(setup.env.console, branch(), keyUrl('key_nope', 'disable'), [])).status).toBe(404);
  const other = await get(`/branches/br_second/keys/${record.key_id}/edit`);
  expect(other.status).toBe(404);
});

it('lists every action on the Activity page, newest first, with who did it and what changed', async () => {
  const created = await postForm(setup.env.console, branch(), `/branches/${branch()}/keys`, [
    ['name', 'audited'],
    ['scopes', 'read'],
  ]);
  const record = { key_id: /Key <code>(key_[^<]+)<\/code> \(audited\)/.exec(created.body)![1]! };
  await postForm(setup.env.console, branch(), keyUrl(record.key_id, 'edit'), [
    ['name', 'audited'],
    ['scopes', 'read'],
    ['rate_limit', '9/s'],
  ]);
  await postForm(setup.env.console, branch(), keyUrl(record.key_id, 'disable'), []);
  await postForm(setup.env.console, branch(), keyUrl(record.key_id, 'enable'), []);
  await postForm(setup.env.console, branch(), keyUrl(record.key_id, 'revoke'), []);

  const page = await get(`/branches/${branch()}/activity?key=${record.key_id}`);
  expect(page.status).toBe(200);
  const rows = [...page.body.matchAll(/<tr[^>]*>\s*<th scope="row">([\s\S]*?)<\/tr>/g)].map((m) => text(m[1]!));
  expect(rows.map((row) => /(created|updated|disabled|enabled|revoked)/.exec(row)?.[1])).toEqual([
    'revoked',
    'enabled',
    'disabled',
    'updated',
    'created',
  ]);
  expect(rows[3]).toContain('rate_limit : none → 9/s');
  const actor = await ctx.actor();
  expect(rows.every((row) => row.includes(actor))).toBe(true);

  const unknown = await get(`/branches/${branch()}/activity?key=key_nope`);
  expect(unknown.status).toBe(404);
});

it('says what to do on an Activity page with nothing yet', async () => {
  const page = await get(`/branches/br_second/activity`);
  expect(page.status).toBe(200);
  expect(text(page.body)).toContain('No key actions yet.');
});
