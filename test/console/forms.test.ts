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
    message: 'Expires must be in the future',
  },
  {
    fields: [
      ['scopes', 'read'],
      ['expires', 'soon'],
    ],
    message: 'Expires must be an ISO 8601 date',
  },
  { fields: [['scopes', 'admin']], message: 'Unknown scope &quot;admin&quot;' },
  { fields: [['name', 'x']], message: 'Scopes needs at least one of' },
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
