/**
 * The settings console refuses what a hostile page or network could send: no launch token or
 * session, a foreign Host (DNS rebinding), a cross-origin POST, a missing or wrong CSRF token.
 * Raw HTTP, because a browser would not let a test forge these headers.
 */
import { listKeys } from '../../lib/operator/keys';
import { createOperatorContext } from '../../lib/operator/context';
import { startConsole } from '../../lib/console/server';
import { openSession, rawRequest, sessionCookie, startEnvironment, type Environment } from './support';

let env: Environment;
let host: string;
const ctx = createOperatorContext(process.env);

beforeAll(async () => {
  env = await startEnvironment();
  host = new URL(env.console.origin).host;
});
afterAll(async () => {
  await env.close();
  ctx.close();
});

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
const FORM_TYPE = 'application/x-www-form-urlencoded';

it('answers every response with the security headers', async () => {
  const response = await rawRequest(env.console.origin, '/');
  expect(response.headers).toMatchObject({
    'content-security-policy': expect.stringContaining("default-src 'self'"),
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cache-control': 'no-store',
  });
  expect(response.headers['content-security-policy']).toContain("frame-ancestors 'none'");
  expect(response.headers['content-security-policy']).not.toContain('unsafe-inline');
});

it('serves pages with no inline script or style, which the CSP would block', async () => {
  const { cookie } = await openSession(env.console, env.stack.demoBranchId);
  for (const page of ['keys', 'usage']) {
    const { body } = await rawRequest(env.console.origin, `/branches/${env.stack.demoBranchId}/${page}`, {
      headers: { cookie },
    });
    expect(body).not.toMatch(/\sstyle=|<style|\son[a-z]+=/i);
    for (const script of body.match(/<script[^>]*>/g) ?? []) {
      expect(script).toMatch(/ src="\/assets\/[\w.]+\.js"| type="application\/json"/);
    }
  }
});

it('refuses pages without a session, and a wrong launch token', async () => {
  const home = await rawRequest(env.console.origin, `/branches/${env.stack.demoBranchId}/keys`);
  expect(home.status).toBe(401);
  expect(home.body).toContain('Open the link the console printed');
  expect(home.body).not.toContain(env.stack.demoKeyId);
  const wrong = await rawRequest(env.console.origin, `/?token=${'x'.repeat(43)}`);
  expect(wrong.status).toBe(403);
  expect(wrong.headers['set-cookie']).toBeUndefined();
});

describe('launch token and session', () => {
  /** A console of its own (the shared one's token is used by the other tests), on a clock the test moves. */
  const ownConsole = async (ttlMs = 12 * 3_600_000) => {
    const clock = { now: 1_000_000 };
    const settings = await startConsole({ port: 0, ctx, sessionTtlMs: ttlMs, now: () => clock.now });
    return { settings, clock };
  };

  it('exchanges the token once for an HttpOnly SameSite=Strict cookie and a URL without it; a second use opens nothing', async () => {
    const { settings } = await ownConsole();
    try {
      const path = `/branches/${env.stack.demoBranchId}/usage`;
      const launch = await rawRequest(settings.origin, `${path}?token=${settings.token}`);
      expect(launch.status).toBe(303);
      expect(launch.headers.location).toBe(path);
      const setCookie = launch.headers['set-cookie']?.[0] ?? '';
      expect(setCookie).toMatch(/; HttpOnly/);
      expect(setCookie).toMatch(/; SameSite=Strict/);
      expect(setCookie).not.toContain(settings.token);
      const cookie = setCookie.split(';')[0]!;

      const again = await rawRequest(settings.origin, `/?token=${settings.token}`);
      expect(again.status).toBe(403);
      expect(again.headers['set-cookie']).toBeUndefined();
      expect(again.body).toContain('works once');
      // The browser that holds the session may open the link again: it just goes on, no new session.
      const reopened = await rawRequest(settings.origin, `/?token=${settings.token}`, { headers: { cookie } });
      expect([reopened.status, reopened.headers['set-cookie']]).toEqual([303, undefined]);
      expect((await rawRequest(settings.origin, path, { headers: { cookie } })).status).toBe(200);
    } finally {
      await settings.close();
    }
  });

  it('ends a session after its lifetime without a request, and each request moves the end on (sliding)', async () => {
    const { settings, clock } = await ownConsole(60_000);
    try {
      const cookie = await sessionCookie(settings);
      const get = () => rawRequest(settings.origin, '/', { headers: { cookie } });
      clock.now += 59_999;
      expect((await get()).status).toBe(200);
      clock.now += 59_999; // 119,998 ms after the launch, 59,999 after the last request
      expect((await get()).status).toBe(200);
      clock.now += 60_000;
      const expired = await get();
      expect(expired.status).toBe(401);
      expect(expired.body).toContain('Open the console from its link');
      clock.now -= 60_000; // the session is gone, not merely late
      expect((await get()).status).toBe(401);
    } finally {
      await settings.close();
    }
  });

  it.each(['//evil.example/', '/\\evil.example/', '/%2F%2Fevil.example/'])(
    'never redirects off the console: a launch link on %s goes to a path of its own',
    async (path) => {
      const { settings } = await ownConsole();
      try {
        const launch = await rawRequest(settings.origin, `${path}?token=${settings.token}`);
        expect(launch.status).toBe(303);
        const target = new URL(launch.headers.location!, settings.origin);
        expect(target.origin).toBe(settings.origin);
      } finally {
        await settings.close();
      }
    },
  );
});

it('refuses a foreign Host header (DNS rebinding) with 421, even with a valid session', async () => {
  const { cookie } = await openSession(env.console, env.stack.demoBranchId);
  for (const foreign of [
    'evil.example:80',
    `attacker.example:${new URL(env.console.origin).port}`,
    `localhost.attacker.example:${new URL(env.console.origin).port}`,
  ]) {
    const response = await rawRequest(env.console.origin, `/branches/${env.stack.demoBranchId}/keys`, {
      headers: { host: foreign, cookie },
    });
    expect(response.status).toBe(421);
    expect(response.body).not.toContain(env.stack.demoKeyId);
  }
  const token = await rawRequest(env.console.origin, `/?token=${env.console.token}`, {
    headers: { host: 'rebound.example:1234' },
  });
  expect(token.status).toBe(421);
  expect(token.headers['set-cookie']).toBeUndefined();
});

it('creates a key with the session, CSRF token and same origin, and refuses each missing piece', async () => {
  const branch = env.stack.demoBranchId;
  const { cookie, csrf, form: formId } = await openSession(env.console, branch);
  const keysBefore = (await listKeys(ctx, branch)).length;
  const post = (headers: Record<string, string>, fields: Record<string, string>) =>
    rawRequest(env.console.origin, `/branches/${branch}/keys`, {
      method: 'POST',
      headers: { host, 'content-type': FORM_TYPE, ...headers },
      body: form(fields),
    });
  const fields = { _csrf: csrf, _form: formId, name: 'forged', scopes: 'read' };

  expect((await post({}, fields)).status).toBe(401); // no cookie
  expect((await post({ cookie }, { ...fields, _csrf: '' })).status).toBe(403);
  const { _csrf: _omit, ...withoutCsrf } = fields;
  expect((await post({ cookie }, withoutCsrf)).status).toBe(403);
  // One character changed (never to itself: a token ending in 'A' would otherwise be sent as it is).
  const forged = csrf.slice(0, -1) + (csrf.endsWith('A') ? 'B' : 'A');
  expect((await post({ cookie }, { ...fields, _csrf: forged })).status).toBe(403);
  expect((await post({ cookie, origin: 'http://evil.example' }, fields)).status).toBe(403);
  expect((await post({ cookie, 'sec-fetch-site': 'cross-site' }, fields)).status).toBe(403);
  expect((await post({ cookie, 'sec-fetch-site': 'same-site' }, fields)).status).toBe(403);
  expect((await post({ cookie, origin: 'null' }, fields)).status).toBe(403); // e.g. a sandboxed frame
  expect((await listKeys(ctx, branch)).length).toBe(keysBefore);

  const created = await post({ cookie, origin: env.console.origin, 'sec-fetch-site': 'same-origin' }, fields);
  expect(created.status).toBe(200);
  expect(created.headers['cache-control']).toBe('no-store');
  expect(created.headers.location).toBeUndefined();
  expect(created.body).toMatch(/<code id="new-key-value" class="key-value">wsk_[0-9A-Za-z]+<\/code>/);
  expect((await listKeys(ctx, branch)).length).toBe(keysBefore + 1);
  const value = /id="new-key-value" class="key-value">(wsk_[0-9A-Za-z]+)</.exec(created.body)![1]!;
  expect(env.logged.join('\n')).not.toContain(value);

  // The same form again (a reload): no second key, and no value.
  const again = await post({ cookie, origin: env.console.origin }, fields);
  expect(again.status).toBe(409);
  expect(again.body).not.toMatch(/wsk_[0-9A-Za-z]{20,}/);
  expect((await listKeys(ctx, branch)).length).toBe(keysBefore + 1);
});

it.each([
  ['revoke', 'This cannot be undone'],
  ['roll', 'Grace period'],
])(
  'refuses a cross-origin %s or one without its CSRF token, and a GET never changes anything',
  async (action, text) => {
    const branch = env.stack.demoBranchId;
    const { cookie, csrf } = await openSession(env.console, branch);
    const path = `/branches/${branch}/keys/${env.stack.demoKeyId}/${action}`;
    const confirm = await rawRequest(env.console.origin, path, { headers: { cookie } });
    expect(confirm.status).toBe(200);
    expect(confirm.body).toContain(text);
    const crossOrigin = await rawRequest(env.console.origin, path, {
      method: 'POST',
      headers: { host, cookie, origin: 'http://evil.example', 'content-type': FORM_TYPE },
      body: form({ _csrf: csrf }),
    });
    expect(crossOrigin.status).toBe(403);
    const noCsrf = await rawRequest(env.console.origin, path, {
      method: 'POST',
      headers: { host, cookie, origin: env.console.origin, 'content-type': FORM_TYPE },
      body: '',
    });
    expect(noCsrf.status).toBe(403);
    const key = (await listKeys(ctx, branch)).find((k) => k.key_id === env.stack.demoKeyId);
    expect(key?.status).toBe('active');
    expect(key?.rolled_to).toBeUndefined();
  },
);

it('answers unknown pages, branches and bad input with an error page, never a stack trace', async () => {
  const { cookie } = await openSession(env.console, env.stack.demoBranchId);
  const get = (path: string) => rawRequest(env.console.origin, path, { headers: { cookie } });
  const unknownBranch = await get('/branches/br_nope/keys');
  expect(unknownBranch.status).toBe(404);
  expect(unknownBranch.body).toContain('Unknown branch');
  expect((await get('/nowhere')).status).toBe(404);
  expect((await get('/branches/%E0%A4%A/keys')).status).toBe(400);
  const badCursor = await get(`/branches/${env.stack.demoBranchId}/usage?cursor=not-a-cursor`);
  expect(badCursor.status).toBe(400);
  expect(badCursor.body).not.toMatch(/at .*\.ts:\d+/);
  const unknownKey = await get(`/branches/${env.stack.demoBranchId}/usage?key=key_nope`);
  expect(unknownKey.status).toBe(404);
});

const badInput: { name: string; path: () => string; status: number; method?: string }[] = [
  { name: 'a 5,000-character branch id', path: () => `/branches/${'b'.repeat(5000)}/keys`, status: 400 },
  {
    name: 'a 5,000-character key id',
    path: () => `/branches/${env.stack.demoBranchId}/keys/${'k'.repeat(5000)}/revoke`,
    status: 400,
  },
  { name: 'a 5,000-character branch to open', path: () => `/branches?branch=${'b'.repeat(5000)}`, status: 400 },
  {
    name: 'a 5,000-character usage key filter',
    path: () => `/branches/${env.stack.demoBranchId}/usage?key=${'k'.repeat(5000)}`,
    status: 400,
  },
  {
    name: 'a 5,000-character cursor',
    path: () => `/branches/${env.stack.demoBranchId}/usage?cursor=${'c'.repeat(5000)}`,
    status: 400,
  },
  {
    name: 'a 5,000-character CSV filter',
    path: () => `/branches/${env.stack.demoBranchId}/usage.csv?route=${'r'.repeat(5000)}`,
    status: 400,
  },
  {
    name: 'a 5,000-character key search',
    path: () => `/branches/${env.stack.demoBranchId}/keys?q=${'q'.repeat(5000)}`,
    status: 400,
  },
  {
    name: 'a control character in an id',
    path: () => `/branches/${env.stack.demoBranchId}/keys/key%00x/roll`,
    status: 400,
  },
  { name: 'an unknown key', path: () => `/branches/${env.stack.demoBranchId}/keys/key_nope/roll`, status: 404 },
  {
    name: 'a key of another branch',
    path: () => `/branches/br_second/keys/${env.stack.demoKeyId}/revoke`,
    status: 404,
  },
  { name: 'an unknown status filter', path: () => `/branches/${env.stack.demoBranchId}/usage?status=9xx`, status: 400 },
  {
    name: 'an unknown route filter',
    path: () => `/branches/${env.stack.demoBranchId}/usage?route=DELETE%20%2F`,
    status: 400,
  },
  { name: 'an unknown period', path: () => `/branches/${env.stack.demoBranchId}/usage?period=1y`, status: 400 },
  { name: 'an unknown key status', path: () => `/branches/${env.stack.demoBranchId}/keys?status=lost`, status: 400 },
  { name: 'a wrong method', path: () => `/branches/${env.stack.demoBranchId}/usage`, status: 405, method: 'PUT' },
];

it.each(badInput)('answers $name with a $status page, never a 500', async ({ path, status, method = 'GET' }) => {
  const cookie = await sessionCookie(env.console);
  const response = await rawRequest(env.console.origin, path(), { method, headers: { cookie } });
  expect(response.status).toBe(status);
  expect(response.headers['content-type']?.toLowerCase()).toBe('text/html; charset=utf-8');
  expect(response.body).toContain('<h1>');
  expect(response.body).not.toMatch(/at .*\.ts:\d+|ValidationException/);
  expect(env.logged).toEqual([]);
});
