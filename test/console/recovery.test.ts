/**
 * A browser locked out gets back in without a restart: a planted cookie of the console's name
 * cannot shadow a valid session, and the terminal can issue a new launch link. A roll with a
 * grace period the form does not offer is refused with the form kept.
 */
import { PassThrough } from 'node:stream';
import { offerNewLinks } from '../../lib/console/command';
import { startConsole } from '../../lib/console/server';
import { openSession, rawRequest, sessionCookie, useEnvironment } from './support';

const setup = useEnvironment();

describe('a planted cookie of the same name', () => {
  it('cannot shadow the session: a valid one wins, in either order', async () => {
    const cookie = await sessionCookie(setup.env.console);
    const name = cookie.split('=')[0]!;
    const path = `/branches/${setup.env.stack.demoBranchId}/keys`;
    for (const header of [`${cookie}; ${name}=planted`, `${name}=planted; ${cookie}`, `${name}=; ${cookie}`]) {
      const response = await rawRequest(setup.env.console.origin, path, { headers: { cookie: header } });
      expect(response.status).toBe(200);
      expect(response.body).toContain(setup.env.stack.demoKeyId);
    }
    const planted = await rawRequest(setup.env.console.origin, path, { headers: { cookie: `${name}=planted` } });
    expect(planted.status).toBe(401);
  });
});

describe('a new launch link from the terminal', () => {
  it('prints a link per line typed; it opens a session once, and the one before opens nothing', async () => {
    const settings = await startConsole({ port: 0, ctx: setup.ctx, log: () => undefined });
    const input = new PassThrough();
    const printed: string[] = [];
    const stop = offerNewLinks(settings, input, (text) => printed.push(text));
    try {
      const first = await rawRequest(settings.origin, `/?token=${settings.token}`);
      expect(first.status).toBe(303);
      const refused = await rawRequest(settings.origin, `/?token=${settings.token}`);
      expect(refused.status).toBe(403);
      expect(refused.body).toContain('Press Enter in the terminal running the console for a new link');

      input.write('\n');
      await new Promise((resolve) => setImmediate(resolve));
      expect(printed).toHaveLength(1);
      const link = /^Settings console: (http:\/\/\S+)\n$/.exec(printed[0]!)![1]!;
      expect(new URL(link).origin).toBe(settings.origin);
      const unused = new URL(link).searchParams.get('token')!;
      input.write('\n');
      await new Promise((resolve) => setImmediate(resolve));
      const latest = new URL(/(http:\/\/\S+)/.exec(printed[1]!)![1]!);
      // The link before the latest opens nothing, even unused; the latest opens one session, once.
      expect((await rawRequest(settings.origin, `/?token=${unused}`)).status).toBe(403);
      const launch = await rawRequest(settings.origin, `${latest.pathname}${latest.search}`);
      expect(launch.status).toBe(303);
      expect(launch.headers['set-cookie']?.[0]).toMatch(/; HttpOnly; SameSite=Strict/);
      expect((await rawRequest(settings.origin, `${latest.pathname}${latest.search}`)).status).toBe(403);
    } finally {
      stop();
      await settings.close();
    }
  });
});

describe('a roll with a grace period the form does not offer', () => {
  it.each(['', '3w', '400d', 'x'.repeat(2_000)])('is a 400 that keeps the form (grace %#)', async (grace) => {
    const branch = setup.env.stack.demoBranchId;
    const { record } = await setup.ctx.keys.create({ branchId: branch, scopes: ['read'], name: 'grace kept' });
    const { cookie, csrf, form } = await openSession(setup.env.console, branch);
    const post = (fields: [string, string][]) =>
      rawRequest(setup.env.console.origin, `/branches/${branch}/keys/${record.key_id}/roll`, {
        method: 'POST',
        headers: { cookie, origin: setup.env.console.origin, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams([['_csrf', csrf], ...fields]).toString(),
      });
    const refused = await post([
      ['_form', form],
      ['grace', grace],
    ]);
    expect(refused.status).toBe(400);
    expect(refused.body).toContain('Choose a grace period');
    expect(refused.body).toMatch(/<select id="grace" name="grace">/);
    expect((await setup.ctx.keys.getById(record.key_id))!.rolled_to).toBeUndefined();
    // The form is still good: sent again with a grace it offers, the key is rolled.
    const kept = /name="_form" value="([^"]+)"/.exec(refused.body)![1]!;
    const rolled = await post([
      ['_form', kept],
      ['grace', '1h'],
    ]);
    expect(rolled.status).toBe(200);
    expect(rolled.body).toContain('id="new-key-value"');
  });
});
