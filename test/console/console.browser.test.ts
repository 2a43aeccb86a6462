/**
 * The settings console in a real browser (Debian's Chromium through playwright-core), against
 * the local environment, at a laptop's width (1280 px) and a phone's (390 px). Every page a test
 * opens is checked with axe-core (no serious or critical violation) and for sideways scrolling;
 * keys created, rolled and revoked in the pages take effect on the API; the usage filters select
 * the same calls in the log and the CSV. The reader is in Asia/Kolkata (UTC+5:30).
 */
import type { Locator, Page } from 'playwright-core';
import { createOperatorContext } from '../../lib/operator/context';
import { listActivity } from '../../lib/operator/keys';
import { auditPage, smallTargets } from '../../scripts/console-audit';
import { launchChromium, type ChromiumSession } from '../../scripts/chromium';
import { describeIfChromium, startEnvironment, type Environment } from './support';

describeIfChromium('settings console in Chromium', () => {
  let env: Environment;
  let browser: ChromiumSession;
  let page: Page;
  let problems: string[];
  const ctx = createOperatorContext(process.env);

  beforeAll(async () => {
    env = await startEnvironment();
    browser = await launchChromium(undefined, { timezoneId: 'Asia/Kolkata', locale: 'en-US' });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await env?.close();
    ctx.close();
  });

  const api = (key: string, path = '/v1/branch') =>
    fetch(`${env.stack.gateway.baseUrl}${path}`, { headers: { authorization: `Bearer ${key}` } });
  const branch = () => env.stack.demoBranchId;

  /** axe-core and the width check on the page as it is now. */
  const audited = async () => {
    const audit = await auditPage(page);
    expect({ url: audit.url, serious: audit.serious, duplicateNames: audit.duplicateNames }).toEqual({
      url: audit.url,
      serious: [],
      duplicateNames: [],
    });
    expect(audit.scrollWidth).toBeLessThanOrEqual(audit.innerWidth);
    if (audit.innerWidth < 1024) expect(await smallTargets(page)).toEqual([]);
  };
  /** Opens a key's action menu, then follows one of its actions. */
  const keyAction = async (label: string, name: string, keyId: string) => {
    await page
      .locator('summary')
      .and(page.getByLabel(`Actions for key ${name} (${keyId})`, { exact: true }))
      .click();
    await page.getByRole('link', { name: `${label} key ${name} (${keyId})` }).click();
  };
  /** Follows a link and waits for the next page to load whole (a click returns as it starts arriving). */
  const follow = (link: Locator) => Promise.all([page.waitForEvent('load'), link.click()]);
  /** Waits until the page shows `count` elements matching `selector` (a filter applied in place). */
  const countBecomes = (selector: string, count: number) =>
    page.waitForFunction(([s, n]) => (globalThis as any).document.querySelectorAll(s).length === n, [
      selector,
      count,
    ] as const);
  /** A response the test expects to be an error status, which Chromium logs on its console. */
  const expectLoggedStatus = (status: number) => {
    expect(problems).toEqual([expect.stringContaining(`status of ${status}`)]);
    problems.length = 0;
  };

  describe.each([1280, 390])('at %i px', (width) => {
    const tag = `w${width}`;

    // One tab per width, each test starting with a fresh navigation in it.
    beforeAll(async () => {
      page = await browser.context.newPage();
      await page.setViewportSize({ width, height: 900 });
      page.on('console', (message) => {
        if (message.type() === 'error') problems.push(message.text());
      });
      page.on('pageerror', (error) => problems.push(error.message));
      page.on('request', (request) => {
        if (!request.url().startsWith(env.console.origin) && !request.url().startsWith('data:')) {
          problems.push(`request outside the console: ${request.url()}`);
        }
      });
    });
    afterAll(() => page?.close());
    beforeEach(async () => {
      problems = [];
      // The launch link works once; this browser keeps its session, so opening it again just goes on.
      await page.goto(env.console.url);
    });
    afterEach(() => {
      // No CSP violation, script error or outside request on any page.
      expect(problems).toEqual([]);
    });

    const openKeys = async (query = '') => {
      await page.goto(`${env.console.origin}/branches/${branch()}/keys${query}`);
      await page.getByRole('heading', { level: 1, name: 'API keys' }).waitFor();
    };

    it('opens on the home page from the launch link, the session in an HttpOnly cookie', async () => {
      expect(page.url()).toBe(`${env.console.origin}/`);
      const cookies = await browser.context.cookies(env.console.origin);
      expect(cookies).toHaveLength(1);
      expect(cookies[0]).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
      expect(await page.evaluate(() => (globalThis as any).document.cookie)).toBe('');
      // Each branch offered by its name as well as its id.
      const { name } = (await ctx.branchData.getBranch(branch()))!;
      expect(await page.locator('main li').first().textContent()).toContain(name);
      await audited();
    });

    it('creates a key from the panel at the top: a field error first, then the value once with a copy button', async () => {
      await openKeys();
      await page.getByRole('button', { name: 'Create key' }).click();
      await page.getByLabel('Name', { exact: true }).fill(`${tag} created`);
      await page.getByLabel(/Rate limit/).fill('lots');
      await page.getByRole('button', { name: 'Create this key' }).click();
      // The error is next to its field, which says so and has the focus; what was typed stays.
      const rateLimit = page.getByLabel(/Rate limit/);
      expect(await rateLimit.getAttribute('aria-invalid')).toBe('true');
      const describedBy = (await rateLimit.getAttribute('aria-describedby'))!;
      expect(await page.locator(`#${describedBy}`).textContent()).toMatch(/rate/i);
      expect(await page.evaluate(() => (globalThis as any).document.activeElement?.id)).toBe('key-rate-limit');
      expect(await page.getByLabel('Name', { exact: true }).inputValue()).toBe(`${tag} created`);
      expectLoggedStatus(400);
      await audited();

      await rateLimit.fill('20/s');
      await page.getByRole('checkbox', { name: 'team:read' }).check();
      await page.getByRole('button', { name: 'Create this key' }).click();
      const value = (await page.locator('#new-key-value').textContent())!;
      expect(value).toMatch(/^wsk_[0-9A-Za-z]+$/);
      expect(await page.getByRole('alert').first().textContent()).toContain('only time');
      // The value is in the body only: not in the address, cookies or storage.
      expect(page.url()).not.toContain(value);
      expect(JSON.stringify(await browser.context.cookies())).not.toContain(value);
      expect(
        await page.evaluate(() => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage })),
      ).toBe('{}{}');
      await audited();

      await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: env.console.origin });
      await page.getByRole('button', { name: 'Copy key' }).click();
      await page.getByText('Copied to the clipboard.').waitFor();
      expect(await page.evaluate(() => (globalThis as any).navigator.clipboard.readText())).toBe(value);
      expect((await api(value)).status).toBe(200);
      expect(await page.getByRole('row', { name: new RegExp(`${tag} created`) }).textContent()).toContain(
        'read, team:read',
      );

      // A reload sends the form again: refused (409), no second key, no value.
      await page.reload();
      expect(await page.content()).not.toContain(value);
      expect(await page.getByRole('alert').textContent()).toContain('This form was already sent');
      expectLoggedStatus(409);
    });

    it('searches and filters keys by status, says what to do when none match, and names each action after its key', async () => {
      const live = await ctx.keys.create({ branchId: branch(), scopes: ['read'], name: `${tag} findme` });
      const gone = await ctx.keys.create({ branchId: branch(), scopes: ['read'], name: `${tag} findme old` });
      await ctx.keys.revoke(gone.record.key_id);
      await openKeys();
      await audited();
      // With the console's script the filters apply as they change: no button to press, the
      // search keeps the focus, and the address follows.
      expect(await page.getByRole('button', { name: 'Filter keys' }).isVisible()).toBe(false);
      const search = page.getByRole('searchbox', { name: 'Search name, id or key value' });
      await search.pressSequentially(`${tag} FINDME`);
      await countBecomes('table tbody tr', 2);
      expect(await page.evaluate(() => (globalThis as any).document.activeElement?.id)).toBe('filter-q');
      await page.locator('#filter-status').selectOption('revoked');
      await countBecomes('table tbody tr', 1);
      expect(await page.getByRole('row').nth(1).textContent()).toContain(gone.record.key_id);
      expect(new URL(page.url()).searchParams.get('status')).toBe('revoked');
      expect(await page.locator('[data-filter-status]').textContent()).toMatch(/^1 key\(s\) matching the filters/);
      await audited();

      // Each action's accessible name says which key it acts on.
      await openKeys(`?q=${encodeURIComponent(`${tag} findme`)}`);
      const names = await page
        .locator('.actions a')
        .evaluateAll((links) => links.map((a) => a.getAttribute('aria-label')));
      expect(names).toEqual(
        expect.arrayContaining([
          `Revoke key ${tag} findme (${live.record.key_id})`,
          `Roll key ${tag} findme (${live.record.key_id})`,
        ]),
      );
      expect(new Set(names).size).toBe(names.length);
      const all = await page
        .locator('a, button, input, select, summary')
        .evaluateAll((controls) => controls.map((c) => c.getAttribute('aria-label') ?? c.textContent?.trim() ?? ''));
      expect(all.filter((name) => name.startsWith('Revoke key')).length).toBe(
        new Set(all.filter((n) => n.startsWith('Revoke key'))).size,
      );

      await openKeys(`?q=${encodeURIComponent(`${tag} nothing like it`)}`);
      expect(await page.locator('.empty').textContent()).toContain('No key matches these filters');
      await audited();
      await page.getByRole('link', { name: 'Show all keys' }).click();
      expect(await page.locator('table tbody tr').count()).toBeGreaterThan(2);
    });

    it('revokes after a confirmation page, and the API refuses the key on its next call', async () => {
      const { key, record } = await ctx.keys.create({ branchId: branch(), scopes: ['read'], name: `${tag} revoke` });
      expect((await api(key)).status).toBe(200);
      await openKeys(`?q=${encodeURIComponent(`${tag} revoke`)}`);
      await keyAction('Revoke', `${tag} revoke`, record.key_id);
      await page.getByRole('heading', { name: `Revoke key “${tag} revoke”?` }).waitFor();
      await audited();
      expect((await api(key)).status).toBe(200); // asking is not revoking
      await page.getByRole('button', { name: `Revoke key “${tag} revoke”` }).click();
      await page
        .getByRole('status')
        .filter({ hasText: `(${record.key_id}) is revoked.` })
        .waitFor();
      expect(await page.getByRole('row', { name: new RegExp(`${tag} revoke`) }).textContent()).toContain('revoked');
      expect((await api(key)).status).toBe(401);
    });

    it('rolls with a grace choice: the new value is shown once and the old key stops when asked', async () => {
      const { key: old, record } = await ctx.keys.create({
        branchId: branch(),
        scopes: ['read'],
        name: `${tag} roll`,
        rateLimit: '600/min',
      });
      await openKeys(`?q=${encodeURIComponent(`${tag} roll`)}`);
      await keyAction('Roll', `${tag} roll`, record.key_id);
      await page.getByRole('heading', { name: `Roll key “${tag} roll”?` }).waitFor();
      await audited();
      await page.getByLabel('Grace period').selectOption('0');
      await page.getByRole('button', { name: `Roll key “${tag} roll”` }).click();
      const value = (await page.locator('#new-key-value').textContent())!;
      expect(value).toMatch(/^wsk_[0-9A-Za-z]+$/);
      expect(await page.locator('.new-key').textContent()).toContain(`Key ${record.key_id} keeps working until`);
      expect((await api(value)).status).toBe(200);
      const refused = await api(old);
      expect([refused.status, ((await refused.json()) as any).error.code]).toEqual([401, 'expired_api_key']);
      await audited();
    });

    it('edits a key, disables and enables it, and the Activity page lists each action with who did it', async () => {
      const { key, record } = await ctx.keys.create({ branchId: branch(), scopes: ['read'], name: `${tag} edit` });
      await openKeys(`?q=${encodeURIComponent(`${tag} edit`)}`);
      await keyAction('Edit', `${tag} edit`, record.key_id);
      await page.getByRole('heading', { name: `Edit key “${tag} edit”` }).waitFor();
      await audited();
      await page.getByLabel('Name', { exact: true }).fill(`${tag} edited`);
      await page.getByLabel(/Rate limit/).fill('7/min');
      await page.getByRole('button', { name: `Save key “${tag} edit”` }).click();
      await page.getByRole('status').filter({ hasText: 'is updated' }).waitFor();
      expect(await page.getByRole('row', { name: new RegExp(`${tag} edited`) }).textContent()).toContain('7/min');

      await keyAction('Disable', `${tag} edited`, record.key_id);
      await audited();
      await page.getByRole('button', { name: `Disable key “${tag} edited”` }).click();
      await page.getByRole('status').filter({ hasText: 'is disabled' }).waitFor();
      const disabled = await api(key);
      expect([disabled.status, ((await disabled.json()) as any).error.code]).toEqual([401, 'disabled_api_key']);
      await page.locator('#filter-status').selectOption('disabled');
      await countBecomes('table tbody tr', 1);
      expect(await page.getByRole('row', { name: new RegExp(`${tag} edited`) }).count()).toBe(1);
      await audited();
      await keyAction('Enable', `${tag} edited`, record.key_id);
      await page.getByRole('button', { name: `Enable key “${tag} edited”` }).click();
      await page.getByRole('status').filter({ hasText: 'is enabled again' }).waitFor();
      expect((await api(key)).status).toBe(200);

      await page.getByRole('link', { name: 'Activity' }).click();
      await page.locator('#activity-key').selectOption(record.key_id);
      await page.getByRole('button', { name: 'Show activity' }).click();
      const actions = await page.locator('#activity tbody tr td[data-label="Action"]').allTextContents();
      expect(actions.map((a) => a.trim())).toEqual(['enabled', 'disabled', 'updated', 'created']);
      expect(await page.locator('#activity tbody tr').first().textContent()).toContain(await ctx.actor());
      await audited();
    });

    it('filters the usage log by key, status and route, with names, caller IPs and details; the CSV holds exactly those calls', async () => {
      const { key, record } = await ctx.keys.create({ branchId: branch(), scopes: ['read'], name: `${tag} usage` });
      const statuses = [];
      for (const path of [
        '/v1/branch',
        '/v1/members',
        '/v1/payment-providers/pp_gone',
        '/v1/payment-providers/pp_nope',
      ]) {
        statuses.push((await api(key, path)).status);
      }
      expect(statuses).toEqual([200, 200, 404, 404]);
      const usage = `${env.console.origin}/branches/${branch()}/usage?key=${record.key_id}`;
      // The chart reads the rollups, which the local change feed keeps current: wait until it has applied the calls.
      await env.stack.usageFeed.drain();
      await page.goto(usage);
      await audited();
      const summary = (await page.locator('#usage-summary').textContent())!.replace(/\s+/g, ' ').trim();
      expect(summary).toMatch(/^4 call\(s\) · latency p50 ≤[\d.]+ ms · p95 ≤[\d.]+ ms$/);
      const drawn = await page.evaluate(() =>
        (globalThis as any).Chart.getChart('usage-chart').data.datasets.map((d: { data: number[] }) =>
          d.data.reduce((a: number, b: number) => a + b, 0),
        ),
      );
      expect(drawn).toEqual([2, 0, 2, 0]); // 2xx, 3xx, 4xx, 5xx over the period: the summary's 4

      await page.locator('#filter-status').selectOption('4xx');
      await page.locator('#filter-route').selectOption('GET /v1/payment-providers/{id}');
      await page.getByRole('button', { name: 'Apply filters' }).click();
      const rows = page.locator('#usage-log tbody tr');
      expect(await rows.count()).toBe(2);
      const first = rows.first();
      expect(await first.textContent()).toContain(`${tag} usage`);
      expect(await first.locator('td[data-label="Route"]').textContent()).toContain('GET /v1/payment-providers/{id}');
      await first.getByRole('group').or(first.locator('details')).first().locator('summary').click();
      const details = (await first.locator('details dl').textContent())!.replace(/\s+/g, ' ');
      // The raw path and the caller's IP are in the call's details; newest first.
      expect(details).toContain('/api/v1/payment-providers/pp_nope');
      expect(details).toMatch(/Caller IP ?(127\.0\.0\.1|::1|::ffff:127\.0\.0\.1|not recorded)/);
      await audited();

      const download = page.waitForEvent('download');
      await page.getByRole('link', { name: 'Export CSV' }).click();
      const stream = await (await download).createReadStream();
      let csv = '';
      for await (const chunk of stream) csv += String(chunk);
      const [header, ...lines] = csv.trimEnd().split('\r\n');
      expect(header).toBe('timestamp,key_id,method,path,route,status,response_time_ms,request_id,source_ip');
      const requestIds = await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-request-id')));
      expect(lines.map((line) => line.split(',')[7])).toEqual(requestIds);
      expect(lines.map((line) => line.split(',')[5])).toEqual(['404', '404']);
    });

    it('shows every time in the reader’s time zone, with the UTC instant on hover', async () => {
      await openKeys();
      const times = await page
        .locator('main time')
        .evaluateAll((elements) =>
          elements.slice(0, 5).map((t) => [t.getAttribute('datetime'), t.getAttribute('title'), t.textContent]),
        );
      expect(times.length).toBeGreaterThan(0);
      for (const [datetime, title, text] of times) {
        expect(title).toBe(`${new Date(datetime!).toISOString()} (UTC)`);
        // Kolkata is UTC+5:30 all year: the same instant's minute and day there, and the zone named.
        const there = new Date(Date.parse(datetime!) + 5.5 * 3_600_000);
        expect(text).toContain(`:${String(there.getUTCMinutes()).padStart(2, '0')}`);
        expect(text).toMatch(new RegExp(`\\b${there.getUTCDate()},`));
        expect(text).toContain('GMT+5:30');
      }
      // Days are the rollups' UTC days, and say so.
      await page.goto(`${env.console.origin}/branches/${branch()}/usage?period=7d&bucket=day`);
      await page.getByText('Chart data as a table').click();
      expect(await page.locator('#usage-chart-table thead th').first().textContent()).toBe('Day (UTC)');
      const days = await page.locator('#usage-chart-table tbody th time').allTextContents();
      expect(days).toHaveLength(8);
      for (const day of days) expect(day).toMatch(/^[A-Z][a-z]{2} \d{1,2}, \d{4} \(UTC\)$/);
      await audited();
    });
  });

  describe('at 1280 px only', () => {
    beforeAll(async () => {
      page = await browser.context.newPage();
      page.on('pageerror', (error) => problems.push(error.message));
    });
    afterAll(() => page?.close());
    beforeEach(async () => {
      problems = [];
      await page.goto(env.console.url);
    });
    afterEach(() => {
      expect(problems).toEqual([]);
    });

    it('has an audit that does catch what it checks: shared control names and sideways scroll', async () => {
      await page.setContent(
        '<main><button>Revoke</button><button>Revoke</button><a href="/a" aria-label="Edit key a">Edit</a>' +
          '<a href="/b" aria-label="Edit key b">Edit</a><pre>' +
          'x'.repeat(1000) +
          '</pre></main>',
      );
      const audit = await auditPage(page);
      expect(audit.duplicateNames).toEqual(['button "Revoke"']);
      expect(audit.scrollWidth).toBeGreaterThan(audit.innerWidth);
    });

    it('reaches every control from the keyboard', async () => {
      await page.goto(`${env.console.origin}/branches/${branch()}/keys?q=demo`);
      const reached = new Set<string>();
      const focused = () =>
        page.evaluate(() => {
          const active = (globalThis as any).document.activeElement;
          return active?.getAttribute('aria-label') ?? `${active?.tagName}:${active?.textContent?.trim() ?? ''}`;
        });
      for (let i = 0; i < 40; i += 1) {
        await page.keyboard.press('Tab');
        const name = await focused();
        reached.add(name);
        // A key's action menu opens with Enter; its actions come next in the tab order.
        if (name.startsWith('Actions for key demo key')) await page.keyboard.press('Enter');
      }
      expect([...reached]).toEqual(
        expect.arrayContaining(['A:API keys', 'A:API usage', 'SUMMARY:Create key', 'INPUT:']),
      );
      expect(
        [...reached].some(
          (name) => name.startsWith('Revoke key demo key') && name.endsWith(`(${env.stack.demoKeyId})`),
        ),
      ).toBe(true);
    });

    it('reads the expiry in the reader’s zone, names the zone, and shows it back as typed', async () => {
      await page.goto(`${env.console.origin}/branches/${branch()}/keys`);
      await page.getByRole('button', { name: 'Create key' }).click();
      // The reader is in Kolkata (UTC+5:30): the field says so, and 09:00 typed is 03:30 UTC.
      const expires = page.getByLabel(/^Expires/);
      expect(await page.locator('label[for="key-expires"]').textContent()).toContain('your time, GMT+5:30');
      await page.getByLabel('Name', { exact: true }).fill('zoned expiry');
      await expires.fill('2030-01-31T09:00');
      await page.getByRole('button', { name: 'Create this key' }).click();
      await page.locator('#new-key-value').waitFor();
      const record = (await ctx.keys.listByBranch(branch())).find((k) => k.name === 'zoned expiry')!;
      expect(record.expires_at).toBe('2030-01-31T03:30:00.000Z');
      // Its row shows that instant in the reader's zone, with the UTC instant on hover.
      const shown = page.getByRole('row', { name: /zoned expiry/ }).locator('td[data-label="Expires"] time');
      expect(await shown.textContent()).toMatch(/Jan 31, 2030, 09:00 AM GMT\+5:30/);
      expect(await shown.getAttribute('title')).toBe('2030-01-31T03:30:00.000Z (UTC)');

      // Edit shows 09:00 again, and saving another field leaves the expiry where it was.
      await page.goto(`${env.console.origin}/branches/${branch()}/keys/${record.key_id}/edit`);
      expect(await page.getByLabel(/^Expires/).inputValue()).toBe('2030-01-31T09:00');
      await page.getByLabel(/Rate limit/).fill('9/min');
      await page.getByRole('button', { name: 'Save key “zoned expiry”' }).click();
      await page.getByRole('status').filter({ hasText: 'is updated' }).waitFor();
      expect((await ctx.keys.getById(record.key_id))?.expires_at).toBe('2030-01-31T03:30:00.000Z');

      // A new expiry, typed in Kolkata too; the Activity page shows before and after as every other time.
      await page.goto(`${env.console.origin}/branches/${branch()}/keys/${record.key_id}/edit`);
      await page.getByLabel(/^Expires/).fill('2030-02-01T10:15');
      await page.getByRole('button', { name: 'Save key “zoned expiry”' }).click();
      await page.getByRole('status').filter({ hasText: 'is updated' }).waitFor();
      expect((await ctx.keys.getById(record.key_id))?.expires_at).toBe('2030-02-01T04:45:00.000Z');
      await page.goto(`${env.console.origin}/branches/${branch()}/activity?key=${record.key_id}`);
      const changed = page.locator('#activity tbody tr').first().locator('td[data-label="What changed"] time');
      expect(await changed.allTextContents()).toEqual([
        expect.stringMatching(/Jan 31, 2030, 09:00 AM GMT\+5:30/),
        expect.stringMatching(/Feb 1, 2030, 10:15 AM GMT\+5:30/),
      ]);
    });

    it('filters keys with a button where the console’s script does not run', async () => {
      await page.route('**/assets/console.js', (route) => route.fulfill({ status: 200, body: '' }));
      await page.goto(`${env.console.origin}/branches/${branch()}/keys`);
      await page.getByRole('searchbox', { name: 'Search name, id or key value' }).fill('demo key');
      await page.locator('#filter-status').selectOption('active');
      expect(new URL(page.url()).searchParams.get('q')).toBeNull(); // nothing applies by itself
      await page.getByRole('button', { name: 'Filter keys' }).click();
      await page.waitForURL((url) => url.searchParams.get('q') === 'demo key');
      expect(new URL(page.url()).searchParams.get('status')).toBe('active');
      expect(await page.getByRole('row', { name: /demo key/ }).count()).toBe(1);
    });

    it('renders a hostile recorded path as text: no script runs, escapes are visible', async () => {
      await ctx.usage.put(
        {
          key_id: env.stack.demoKeyId,
          branch_id: branch(),
          method: 'GET',
          path: '/api/v1/<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">\u001b[31mred\u202e',
          route: '$default',
          status: 404,
          response_time_ms: 1,
          timestamp: new Date().toISOString(),
          request_id: 'req-hostile',
        },
        1,
      );
      await page.goto(`${env.console.origin}/branches/${branch()}/usage?key=${env.stack.demoKeyId}&route=%24default`);
      const cell = page.locator('tr[data-request-id="req-hostile"] td[data-label="Route"] code');
      expect(await cell.textContent()).toBe(
        'GET /api/v1/<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">\\x1b[31mred\\u{202e}',
      );
      expect(await page.evaluate(() => (globalThis as any).__pwned)).toBeUndefined();
      expect(await page.locator('main img').count()).toBe(0);
    });

    it('pages through the log, newest first, to older calls and back to newer ones', async () => {
      const { record } = await ctx.keys.create({ branchId: branch(), scopes: ['read'], name: 'paged' });
      const now = Date.now();
      await ctx.usage.putBatch(
        Array.from({ length: 120 }, (_, i) => ({
          key_id: record.key_id,
          branch_id: branch(),
          method: 'GET',
          path: `/api/v1/members?n=${i}`,
          route: 'GET /v1/members',
          status: 200,
          response_time_ms: i,
          timestamp: new Date(now - (120 - i) * 1000).toISOString(),
          request_id: `req-page-${String(i).padStart(3, '0')}`,
        })),
        1,
      );
      await page.goto(`${env.console.origin}/branches/${branch()}/usage?key=${record.key_id}`);
      const ids = () =>
        page.locator('#usage-log tbody tr').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-request-id')));
      const link = (name: string) => page.getByRole('navigation', { name: 'Log pages' }).getByRole('link', { name });
      const pageOf = (newest: number, count: number) =>
        Array.from({ length: count }, (_, i) => `req-page-${String(newest - i).padStart(3, '0')}`);
      expect(await ids()).toEqual(pageOf(119, 50));
      expect(await link('Newer calls').count()).toBe(0);
      await follow(link('Older calls'));
      expect(await ids()).toEqual(pageOf(69, 50));
      await follow(link('Older calls'));
      expect(await ids()).toEqual(pageOf(19, 20));
      expect(await link('Older calls').count()).toBe(0);
      await follow(link('Newer calls'));
      expect(await ids()).toEqual(pageOf(69, 50));
      await follow(link('Newer calls'));
      expect(await ids()).toEqual(pageOf(119, 50));
      expect(await link('Newer calls').count()).toBe(0);
      await follow(link('Older calls'));
      await follow(link('Older calls'));
      await follow(link('Newest calls'));
      expect(await ids()).toEqual(pageOf(119, 50));
    });

    it('shows a call’s whole record in a panel wide enough to read, the request id on one line', async () => {
      const { record } = await ctx.keys.create({ branchId: branch(), scopes: ['read'], name: 'detailed' });
      const requestId = '6f1c2a4e-3b5d-4c7e-9a8b-0d1e2f3a4b5c';
      await ctx.usage.put(
        {
          key_id: record.key_id,
          branch_id: branch(),
          method: 'GET',
          path: '/api/v1/payment-providers/pp_123',
          route: 'GET /v1/payment-providers/{id}',
          status: 200,
          response_time_ms: 12.5,
          timestamp: new Date().toISOString(),
          request_id: requestId,
          source_ip: '203.0.113.7',
        },
        1,
      );
      await page.goto(`${env.console.origin}/branches/${branch()}/usage?key=${record.key_id}`);
      await page.getByLabel(`Details of call ${requestId}`).click();
      const panel = page.locator(`tr[data-request-id="${requestId}"] details dl`);
      const text = (await panel.textContent())!.replace(/\s+/g, ' ');
      for (const part of [
        requestId,
        `detailed ${record.start}… ${record.key_id}`,
        'GET /api/v1/payment-providers/pp_123',
        'GET /v1/payment-providers/{id}',
        '200',
        '12.5 ms',
        '203.0.113.7',
      ])
        expect(text).toContain(part);
      const lines = await page
        .locator(`tr[data-request-id="${requestId}"] .request-id`)
        .evaluate((code) => code.getClientRects().length);
      expect(lines).toBe(1);
      const box = (await panel.boundingBox())!;
      expect(box.width).toBeGreaterThanOrEqual(400);
      expect(box.x).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width).toBeLessThanOrEqual(1280);
    });

    // Last: it leaves the branch with more than one page of keys. It waits on conditions, never on
    // time: the second page is counted once it has loaded (a click returns before that).
    it('lists keys 50 a page, newest first, with the total', async () => {
      const before = (await ctx.keys.listByBranch(branch())).length;
      const missing = Math.max(0, 51 - before);
      // 20 at a time: the count matters here, not the pace.
      for (let i = 0; i < missing; i += 20) {
        await Promise.all(
          Array.from({ length: Math.min(20, missing - i) }, (_, j) =>
            ctx.keys.create({ branchId: branch(), scopes: ['read'], name: `bulk ${i + j}` }),
          ),
        );
      }
      const total = before + missing;
      expect(total).toBeLessThanOrEqual(100); // two pages, the second holding the oldest key
      await page.goto(`${env.console.origin}/branches/${branch()}/keys`);
      const rows = page.locator('table tbody tr');
      expect(await rows.count()).toBe(50);
      expect(await page.locator('table caption').textContent()).toMatch(new RegExp(`Keys 1–50 of ${total}`));
      await page.getByRole('link', { name: 'Older keys' }).click();
      await page.waitForURL((url) => url.searchParams.get('page') === '2', { waitUntil: 'load' });
      expect(await page.locator('table caption').textContent()).toMatch(new RegExp(`Keys 51–${total} of ${total}`));
      expect(await rows.count()).toBe(total - 50);
      expect(await page.getByRole('row', { name: /demo key/ }).count()).toBe(1); // the oldest
    }, 90_000); // a safety net for seeding on a busy machine, not a wait

    // After the one above: the branch has more than 50 key actions.
    it('pages the activity like the log: newer and older actions', async () => {
      const all = (await listActivity(ctx, { branchId: branch(), limit: 1000 })).map((e) => e.activity_id);
      expect(all.length).toBeGreaterThan(50);
      await page.goto(`${env.console.origin}/branches/${branch()}/activity`);
      const ids = () =>
        page.locator('#activity tbody tr').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-activity-id')));
      const link = (name: string) =>
        page.getByRole('navigation', { name: 'Activity pages' }).getByRole('link', { name });
      expect(await ids()).toEqual(all.slice(0, 50));
      expect(await link('Newer actions').count()).toBe(0);
      await follow(link('Older actions'));
      expect(await ids()).toEqual(all.slice(50, 100));
      await follow(link('Newer actions'));
      expect(await ids()).toEqual(all.slice(0, 50));
      expect(await link('Newer actions').count()).toBe(0);
    });
  });
});
