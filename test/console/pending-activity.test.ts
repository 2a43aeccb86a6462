/**
 * The console's key actions when the activity entry can't be written at once: the change is made,
 * the keys page says so and warns that the entry is still pending and why (HTML-escaped), and the
 * key actions finisher writes it later. The fault is IAM's answer: the verifier's policy proxy
 * (lib/verify/recording-proxy.ts) denies dynamodb:PutItem on the activity table.
 */
import { startConsole, type SettingsConsole } from '../../lib/console/server';
import { createOperatorContext, type OperatorContext } from '../../lib/operator/context';
import { html } from '../../lib/console/layout';
import type { RecordingProxy } from '../../lib/verify/recording-proxy';
import { DENIED as DENIED_TEXT, denyActivityCopy, STAYS } from '../cli/denied-activity';
import { postForm, useEnvironment } from './support';

const setup = useEnvironment();
const { ctx } = setup;
const DENIED = html`${DENIED_TEXT}`.toString();

let proxy: RecordingProxy;
const consoles: { console: SettingsConsole; ctx: OperatorContext }[] = [];

/** A console whose operator context has `env` over the test's own. */
const consoleWith = async (env: Record<string, string>): Promise<SettingsConsole> => {
  const consoleCtx = createOperatorContext({ ...process.env, ...env });
  const settings = await startConsole({ port: 0, ctx: consoleCtx, branches: [branch()], log: () => undefined });
  consoles.push({ console: settings, ctx: consoleCtx });
  return settings;
};

beforeAll(async () => {
  proxy = await denyActivityCopy();
});

afterAll(async () => {
  for (const { console: settings, ctx: consoleCtx } of consoles) {
    await settings.close();
    consoleCtx.close();
  }
  await proxy.close();
});

const branch = () => setup.env.stack.demoBranchId;
const keyUrl = (keyId: string, action: string) => `/branches/${branch()}/keys/${keyId}/${action}`;
const api = async (key: string) =>
  (await fetch(`${setup.env.stack.gateway.baseUrl}/v1/branch`, { headers: { authorization: `Bearer ${key}` } })).status;
const loggedActions = async (keyId: string) =>
  (await ctx.activity.page({ branchId: branch(), keyId, limit: 50 })).entries.map((entry) => entry.action);
const warning = (keyId: string, action: string, reason: string) =>
  `<p role="status" class="warning">Warning: key ${keyId} ${action}, but its activity entry is not written yet (${reason}): ${STAYS}</p>`;

it('disables and edits the key, shows the notice and the pending warning; the finisher writes the entries', async () => {
  const denied = await consoleWith({ DYNAMODB_ENDPOINT: proxy.endpoint });
  const { key, record } = await ctx.keys.create({ branchId: branch(), scopes: ['read'], name: 'pausable' });

  const disabled = await postForm(denied, branch(), keyUrl(record.key_id, 'disable'), []);
  expect(disabled.status).toBe(200);
  expect(disabled.body).toContain(`Key “pausable” (${record.key_id}) is disabled`);
  expect(disabled.body).toContain(warning(record.key_id, 'disabled', DENIED));
  expect(await api(key)).toBe(401);
  expect(await loggedActions(record.key_id)).toEqual(['created']);
  expect(await ctx.keys.outbox.finishAll()).toEqual({ pending: 1, unsent: 0, uncopied: 0 });
  expect(await loggedActions(record.key_id)).toEqual(['disabled', 'created']);

  const edited = await postForm(denied, branch(), keyUrl(record.key_id, 'edit'), [
    ['name', 'renamed'],
    ['scopes', 'read'],
  ]);
  expect(edited.status).toBe(200);
  expect(edited.body).toContain(`Key “renamed” (${record.key_id}) is updated`);
  expect(edited.body).toContain(warning(record.key_id, 'updated', DENIED));
  expect(await ctx.keys.outbox.finishAll()).toEqual({ pending: 1, unsent: 0, uncopied: 0 });
  expect(await loggedActions(record.key_id)).toEqual(['updated', 'disabled', 'created']);
});

it('shows the new key and the pending warning when a created key has no entry written yet', async () => {
  const denied = await consoleWith({ DYNAMODB_ENDPOINT: proxy.endpoint });
  const created = await postForm(denied, branch(), `/branches/${branch()}/keys`, [
    ['name', 'fresh'],
    ['scopes', 'read'],
  ]);
  expect(created.status).toBe(200);
  const keyId = /Warning: key (key_[\w-]+) created/.exec(created.body)?.[1];
  expect(keyId).toBeDefined();
  expect(created.body).toContain(warning(keyId!, 'created', DENIED));
  expect((await ctx.keys.getById(keyId!))?.name).toBe('fresh');
  expect(await ctx.keys.outbox.finishAll()).toEqual({ pending: 1, unsent: 0, uncopied: 0 });
  expect(await loggedActions(keyId!)).toEqual(['created']);
});

it('escapes the reason for HTML', async () => {
  const refusing = await consoleWith({ ACTIVITY_TABLE: 'no<script>' });
  const { record } = await ctx.keys.create({ branchId: branch(), scopes: ['read'], name: 'escaped' });
  const revoked = await postForm(refusing, branch(), keyUrl(record.key_id, 'revoke'), []);
  expect(revoked.status).toBe(200);
  expect(revoked.body).toContain(`Key “escaped” (${record.key_id}) is revoked`);
  expect(revoked.body).toContain('DynamoDB refused the request on table no&lt;script&gt; (ACTIVITY_TABLE,');
  expect(revoked.body).not.toContain('no<script>');
  expect(await ctx.keys.outbox.finishAll()).toEqual({ pending: 1, unsent: 0, uncopied: 0 });
  expect(await loggedActions(record.key_id)).toEqual(['revoked', 'created']);
});

it('redirects as before when the entry is finished at once', async () => {
  const { record } = await ctx.keys.create({ branchId: branch(), scopes: ['read'], name: 'plain' });
  const disabled = await postForm(setup.env.console, branch(), keyUrl(record.key_id, 'disable'), []);
  expect(disabled.status).toBe(303);
  expect(await ctx.keys.outbox.finishAll()).toEqual({ pending: 0, unsent: 0, uncopied: 0 });
});
