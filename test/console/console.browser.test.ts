/**
 * The settings console in a real browser (Debian's Chromium through playwright-core), against
 * the local environment: keys created, shown once and revoked in the pages take effect on the
 * API; calls just made show up in the usage chart, log and CSV; a hostile recorded path stays text.
 */
import type { Page } from 'playwright-core';
import type { UsageRecord } from '../../shared/data/repositories/usage';
import { createOperatorContext } from '../../lib/operator/context';
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
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await env?.close();
    ctx.close();
  });

  beforeEach(async () => {
    page = await browser.context.newPage();
    problems = [];
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text());
    });
    page.on('pageerror', (error) => problems.push(error.message));
    page.on('request', (request) => {
      if (!request.url().startsWith(env.console.origin) && !request.url().startsWith('data:')) {
        problems.push(`request outside the console: ${request.url()}`);
      }
    });
    await page.goto(env.console.url);
  });
  afterEach(async () => {
    await page.close();
    // No CSP violation, script error or outside request on any page.
    expect(problems).toEqual([]);
  });

  const api = (key: string, path = '/v1/branch') =>
    fetch(`${env.stack.gateway.baseUrl}${path}`, { headers: { authorization: `Bearer ${key}` } });

  const openKeys = async () => {
    await page.getByRole('link', { name: 'API keys' }).first().click();
    await page.getByRole('heading', { level: 1, name: 'API keys' }).waitFor();
  };

  it('drops the launch token from the address and keeps the session in an HttpOnly cookie', async () => {
    expect(page.url()).toBe(`${env.console.origin}/`);
    const cookies = await browser.context.cookies(env.console.origin);
    expect(cookies).toHaveLength(1);
    expect(cookies[0]).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
    expect(await page.evaluate(() => (globalThis as any).document.cookie)).toBe('');
  });

  it('creates a key whose value is shown once, works on the API, and is gone after a reload', async () => {
    await openKeys();
    await page.getByLabel('Name').fill('browser test key');
    await page.getByRole('checkbox', { name: 'team:read' }).check();
    await page.getByRole('button', { name: 'Create key' }).click();

    const value = (await page.locator('#new-key-value').textContent())!;
    expect(value).toMatch(/^wsk_[0-9A-Za-z]+$/);
    expect(await page.getByRole('alert').first().textContent()).toContain('only time');
    // The value is in the body only: not in the address, cookies or storage.
    expect(page.url()).not.toContain(value);
    const cookies = await browser.context.cookies();
    expect(JSON.stringify(cookies)).not.toContain(value);
    expect(await page.evaluate(() => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }))).toBe(
      '{}{}',
    );

    await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: env.console.origin });
    await page.getByRole('button', { name: 'Copy key' }).click();
    await page.getByText('Copied to the clipboard.').waitFor();
    expect(await page.evaluate(() => (globalThis as any).navigator.clipboard.readText())).toBe(value);

    const response = await api(value);
    expect(response.status).toBe(200);

    const row = page.getByRole('row', { name: /browser test key/ });
    expect(await row.textContent()).toContain('read, team:read');

    // A reload sends the form again: refused (409), no second key, no value.
    await page.reload();
    expect(await page.content()).not.toContain(value);
    expect(await page.getByRole('alert').textContent()).toContain('This form was already sent');
    expect(problems).toEqual([expect.stringContaining('status of 409')]);
    problems.length = 0;
    await openKeys();
    expect(await page.content()).not.toContain(value);
    expect(await page.getByRole('row', { name: /browser test key/ }).textContent()).toContain(value.slice(0, 8));
  });

  it('shows form errors in the page, keeping what was typed', async () => {
    await openKeys();
    await page.getByLabel('Name').fill('no scopes');
    await page.getByRole('checkbox', { name: 'read', exact: true }).uncheck();
    await page.getByRole('button', { name: 'Create key' }).click();
    expect(await page.getByRole('alert').textContent()).toContain('Scopes needs at least one');
    expect(await page.getByLabel('Name').inputValue()).toBe('no scopes');
    expect(await page.locator('#new-key-value').count()).toBe(0);
    // The form's answer is a 400, which Chromium reports on its console: expected here.
    expect(problems).toEqual([expect.stringContaining('status of 400')]);
    problems.length = 0;
  });

  it('revokes a key after a confirmation, and the API refuses it on the next call', async () => {
    const { key, record } = await ctx.keys.create({
      branchId: env.stack.demoBranchId,
      scopes: ['read'],
      name: 'to revoke',
    });
    expect((await api(key)).status).toBe(200);
    await openKeys();
    const row = page.getByRole('row', { name: /to revoke/ });
    await row.getByRole('button', { name: 'Revoke' }).click();
    await page.getByRole('heading', { name: /Revoke key “to revoke”\?/ }).waitFor();
    expect((await api(key)).status).toBe(200); // asking is not revoking
    await page.getByRole('button', { name: 'Revoke' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: `Key ${record.key_id} is revoked.` })
      .waitFor();
    expect(await page.getByRole('row', { name: /to revoke/ }).textContent()).toContain('revoked');
    expect(
      await page
        .getByRole('row', { name: /to revoke/ })
        .getByRole('button', { name: 'Revoke' })
        .count(),
    ).toBe(0);
    const refused = await api(key);
    expect(refused.status).toBe(401);
  });

  it('rolls a key with a grace choice: the new value is shown once, both work, the old one stops when asked', async () => {
    const { key: old, record } = await ctx.keys.create({
      branchId: env.stack.demoBranchId,
      scopes: ['read'],
      name: 'to roll',
      rateLimit: '600/min',
      allowedIps: ['127.0.0.1/32'],
    });
    await openKeys();
    const row = page.getByRole('row', { name: /to roll/ });
    await row.getByRole('button', { name: 'Roll' }).click();
    await page.getByRole('heading', { name: /Roll key “to roll”\?/ }).waitFor();
    expect((await api(old)).status).toBe(200); // asking is not rolling
    await page.getByLabel('Grace period').selectOption('0');
    await page.getByRole('button', { name: 'Roll' }).click();

    const value = (await page.locator('#new-key-value').textContent())!;
    expect(value).toMatch(/^wsk_[0-9A-Za-z]+$/);
    expect(page.url()).not.toContain(value);
    expect(await page.locator('.new-key').textContent()).toContain(`Key ${record.key_id} keeps working until`);
    // Grace 0: the old key is refused on its next call; the new one carries its settings and works.
    expect((await api(value)).status).toBe(200);
    const refused = await api(old);
    expect([refused.status, ((await refused.json()) as any).error.code]).toEqual([401, 'expired_api_key']);
    const rows = page.getByRole('row', { name: /to roll/ });
    const text = (await rows.allTextContents()).join(' ');
    expect(text).toContain(`rolled from ${record.key_id}`);
    expect(text).toContain(`rolled to`);
    expect(text).toContain('600/min');
    expect(text).toContain('127.0.0.1/32');
    // Sent again (reload): no second roll, and the value is not shown again.
    await page.reload();
    expect(await page.locator('#new-key-value').count()).toBe(0);
    expect((await ctx.keys.listByBranch(env.stack.demoBranchId)).filter((k) => k.name === 'to roll')).toHaveLength(2);
    // The re-sent form's answer is a 409, which Chromium reports on its console: expected here.
    expect(problems).toEqual([expect.stringContaining('status of 409')]);
    problems.length = 0;
  });

  it('creates a key with an allowlist and a rate limit, shows both and the audit findings, refuses a bad CIDR', async () => {
    await openKeys();
    await page.getByLabel('Name').fill('fenced');
    await page.getByLabel(/Allowed IPs/).fill('300.1.1.1/8');
    await page.getByRole('button', { name: 'Create key' }).click();
    expect(await page.getByRole('alert').first().textContent()).toMatch(/Allowed IPs/);
    expect(await page.getByLabel(/Allowed IPs/).inputValue()).toBe('300.1.1.1/8');
    expect(await page.locator('#new-key-value').count()).toBe(0);
    // The form's answer is a 400, which Chromium reports on its console: expected here.
    expect(problems).toEqual([expect.stringContaining('status of 400')]);
    problems.length = 0;

    await page.getByLabel(/Allowed IPs/).fill('203.0.113.0/24');
    await page.getByLabel(/Rate limit/).fill('20/s');
    await page.getByRole('button', { name: 'Create key' }).click();
    const value = (await page.locator('#new-key-value').textContent())!;
    // The local gateway sees this test's calls from 127.0.0.1: outside the list.
    const refused = await api(value);
    expect([refused.status, ((await refused.json()) as any).error.code]).toEqual([403, 'ip_not_allowed']);
    const fenced = (await page.getByRole('row', { name: /fenced/ }).allTextContents()).join(' ');
    expect(fenced).toContain('203.0.113.0/24');
    expect(fenced).toContain('20/s');
    expect(fenced).toContain('no_expiry');
    expect(fenced).not.toContain('no_ip_allowlist');
  });

  it('reaches every control from the keyboard', async () => {
    await openKeys();
    const reached = new Set<string>();
    for (let i = 0; i < 60; i += 1) {
      await page.keyboard.press('Tab');
      reached.add(
        await page.evaluate(() => {
          const active = (globalThis as any).document.activeElement;
          return `${active?.tagName}:${active?.textContent?.trim() ?? ''}`;
        }),
      );
    }
    expect([...reached]).toEqual(
      expect.arrayContaining(['A:API keys', 'A:API usage', 'BUTTON:Revoke', 'BUTTON:Create key']),
    );
  });

  it('shows calls just made in the chart, latency and log, and exports the same rows as CSV', async () => {
    const { key, record } = await ctx.keys.create({
      branchId: env.stack.demoBranchId,
      scopes: ['read'],
      name: 'usage',
    });
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

    await page.getByRole('link', { name: 'API usage' }).first().click();
    await page.getByLabel('Key').selectOption(record.key_id);
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByRole('heading', { name: 'Calls per hour, by status class' }).waitFor();
    // The chart reads the rollups, which the local change feed keeps within moments of each call.
    for (
      let attempt = 0;
      attempt < 20 && !/^ ?4 call/.test((await page.locator('#usage-summary').textContent()) ?? '');
      attempt += 1
    ) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      await page.reload();
    }

    expect((await page.locator('#usage-summary').textContent())!.replace(/\s+/g, ' ')).toMatch(
      /^ ?4 call\(s\) · latency p50 [\d.]+ ms · p95 [\d.]+ ms ?$/,
    );
    // The chart Chart.js drew, read back from its instance: the current hour holds the calls.
    const drawn = await page.evaluate(() => {
      const chart = (globalThis as any).Chart.getChart('usage-chart');
      return chart.data.datasets.map((d: { label: string; data: number[] }) => [d.label, d.data.at(-1)]);
    });
    expect(drawn).toEqual([
      ['2xx', 2],
      ['3xx', 0],
      ['4xx', 2],
      ['5xx', 0],
    ]);

    const log = await page
      .locator('#usage-log tbody tr')
      .evaluateAll((rows) =>
        rows.map((row) => [...row.querySelectorAll('th, td')].map((cell) => cell.textContent!.trim())),
      );
    expect(log.map((cells) => [cells[3], cells[4]])).toEqual([
      ['/api/v1/payment-providers/pp_nope', '404'],
      ['/api/v1/payment-providers/pp_gone', '404'],
      ['/api/v1/members', '200'],
      ['/api/v1/branch', '200'],
    ]);

    const download = page.waitForEvent('download');
    await page.getByRole('link', { name: 'Export CSV' }).click();
    const csv = await (await download).createReadStream().then(async (stream) => {
      let text = '';
      for await (const chunk of stream) text += String(chunk);
      return text;
    });
    const [header, ...rows] = csv.trimEnd().split('\r\n');
    expect(header).toBe('timestamp,key_id,method,path,route,status,response_time_ms,request_id');
    const csvRows = rows.map((line) => line.split(','));
    // Same rows, same order as the log: time, key, method, path, status, ms, request id.
    expect(csvRows.map((c) => [c[0], c[1], c[2], c[3], c[5], c[6], c[7]])).toEqual(log);
  });

  it('pages through the log, newest first', async () => {
    const { record } = await ctx.keys.create({ branchId: env.stack.demoBranchId, scopes: ['read'], name: 'paged' });
    const now = Date.now();
    for (let i = 0; i < 60; i += 1) {
      await ctx.usage.put(
        {
          key_id: record.key_id,
          branch_id: env.stack.demoBranchId,
          method: 'GET',
          path: `/api/v1/members?n=${i}`,
          route: 'GET /v1/members',
          status: 200,
          response_time_ms: i,
          timestamp: new Date(now - (60 - i) * 1000).toISOString(),
          request_id: `req-page-${String(i).padStart(2, '0')}`,
        },
        1,
      );
    }
    await page.goto(`${env.console.origin}/branches/${env.stack.demoBranchId}/usage?key=${record.key_id}`);
    const ids = () => page.locator('#usage-log tbody tr td:last-child').allTextContents();
    const first = await ids();
    expect(first).toHaveLength(50);
    expect(first[0]).toBe('req-page-59');
    await page.getByRole('link', { name: 'Older calls' }).click();
    const second = await ids();
    expect(second).toEqual(Array.from({ length: 10 }, (_, i) => `req-page-${String(9 - i).padStart(2, '0')}`));
    expect(await page.getByRole('link', { name: 'Older calls' }).count()).toBe(0);
    await page.getByRole('link', { name: 'Newest calls' }).click();
    expect((await ids())[0]).toBe('req-page-59');
  });

  it('renders a hostile recorded path as text: no script runs, escapes are visible', async () => {
    const hostile: UsageRecord = {
      key_id: env.stack.demoKeyId,
      branch_id: env.stack.demoBranchId,
      method: 'GET',
      path: '/api/v1/<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">\u001b[31mred\u001b[0m',
      route: '$default',
      status: 404,
      response_time_ms: 1,
      timestamp: new Date().toISOString(),
      request_id: 'req-hostile',
    };
    await ctx.usage.put(hostile, 1);
    await page.goto(`${env.console.origin}/branches/${env.stack.demoBranchId}/usage?key=${env.stack.demoKeyId}`);
    const cell = page
      .getByRole('row', { name: /req-hostile/ })
      .locator('td code')
      .nth(1);
    expect(await cell.textContent()).toBe(
      '/api/v1/<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">\\x1b[31mred\\x1b[0m',
    );
    expect(await page.evaluate(() => (globalThis as any).__pwned)).toBeUndefined();
    expect(await page.locator('main img').count()).toBe(0);
  });

  // Last: it leaves the branch with more than one page of keys.
  it('lists keys 100 a page, newest first, with the total', async () => {
    const before = (await ctx.keys.listByBranch(env.stack.demoBranchId)).length;
    for (let i = 0; i < 101 - before; i += 1) {
      await ctx.keys.create({ branchId: env.stack.demoBranchId, scopes: ['read'], name: `bulk ${i}` });
    }
    await openKeys();
    const rows = page.locator('table tbody tr');
    expect(await rows.count()).toBe(100);
    expect(await page.locator('table caption').textContent()).toMatch(/Keys 1–100 of 101/);
    await page.getByRole('link', { name: 'Older keys' }).click();
    expect(await rows.count()).toBe(1);
    expect(await page.getByRole('row', { name: /demo key/ }).count()).toBe(1); // the oldest
    await page.getByRole('link', { name: 'Newer keys' }).click();
    expect(await rows.count()).toBe(100);
  });
});
