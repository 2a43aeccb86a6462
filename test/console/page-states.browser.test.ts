/**
 * Every state of every console page, at a laptop's width (1280 px) and a phone's (390 px), in
 * Chromium: nothing scrolls sideways (the page is exactly as wide as the window), axe-core finds
 * no violation of any impact, and on the phone every control outside running text is at least
 * 44 × 44 px. States are what a person can reach: menus, disclosures and panels opened, errors,
 * empty lists, second pages.
 */
import type { Page } from 'playwright-core';
import { createOperatorContext } from '../../lib/operator/context';
import { launchChromium, type ChromiumSession } from '../../scripts/chromium';
import { auditPage, smallTargets } from '../../scripts/console-audit';
import { describeIfChromium, startEnvironment, type Environment } from './support';

interface PageState {
  name: string;
  /** Path under the branch (`/branches/<id>`), or from the root when it starts with `//`; a function for ids known only once seeded. */
  path: string | (() => string);
  /** What a person does on the page to reach the state. */
  act?: (page: Page) => Promise<unknown>;
}

const click = (selector: string) => (page: Page) => page.locator(selector).first().click();

describeIfChromium('every console page state', () => {
  let env: Environment;
  let browser: ChromiumSession;
  const ctx = createOperatorContext(process.env);
  let keyId: string;

  beforeAll(async () => {
    env = await startEnvironment();
    browser = await launchChromium(undefined, { timezoneId: 'Asia/Kolkata', locale: 'en-US' });
    const branchId = env.stack.demoBranchId;
    // Two pages of keys and of activity, and two pages of calls with a long path among them.
    // One at a time: twenty at once on a busy machine can time out a write the SDK then retries.
    for (let i = 0; i < 60; i++) {
      await ctx.keys.create({ branchId, scopes: ['read'], name: `Till ${i} with a rather long name` });
    }
    keyId = env.stack.demoKeyId;
    const now = Date.now();
    await ctx.usage.putBatch(
      Array.from({ length: 60 }, (_, i) => ({
        key_id: keyId,
        branch_id: branchId,
        method: 'GET',
        path: `/api/v1/payment-providers/pp_${'x'.repeat(i % 7 === 0 ? 80 : 4)}${i}?expand=members,providers`,
        route: 'GET /v1/payment-providers/{id}',
        status: i % 9 === 0 ? 404 : 200,
        response_time_ms: i + 0.25,
        timestamp: new Date(now - (i + 1) * 60_000).toISOString(),
        request_id: `6f1c2a4e-3b5d-4c7e-9a8b-${String(i).padStart(12, '0')}`,
        source_ip: '2001:db8:85a3::8a2e:370:7334',
      })),
      1,
    );
    const page = await browser.context.newPage();
    await page.goto(env.console.url); // the session, for every page below
    await page.close();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await env?.close();
    ctx.close();
  });

  const createWith = (rateLimit: string) => async (page: Page) => {
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByLabel('Name', { exact: true }).fill('state check');
    await page.getByLabel(/Rate limit/).fill(rateLimit);
    await page.getByRole('button', { name: 'Create this key' }).click();
    await page.locator('h1').waitFor();
  };

  const STATES: PageState[] = [
    { name: 'home', path: '//' },
    { name: 'home, no branch id given', path: '//branches?branch=' },
    { name: 'keys', path: '/keys' },
    { name: 'keys, Create key open', path: '/keys', act: click('details.create > summary') },
    { name: 'keys, a field error', path: '/keys', act: createWith('lots') },
    { name: 'keys, a key just created', path: '/keys', act: createWith('20/s') },
    { name: 'keys, a key’s menu open', path: '/keys', act: click('details.menu > summary') },
    { name: 'keys, filtered to none', path: '/keys?q=nothing-like-it' },
    { name: 'keys, second page', path: '/keys?page=2' },
    { name: 'keys, status filter', path: '/keys?status=active' },
    { name: 'edit', path: () => `/keys/${keyId}/edit` },
    { name: 'disable', path: () => `/keys/${keyId}/disable` },
    { name: 'roll', path: () => `/keys/${keyId}/roll` },
    { name: 'revoke', path: () => `/keys/${keyId}/revoke` },
    { name: 'usage', path: '/usage' },
    { name: 'usage, 30 days by day', path: '/usage?period=30d&bucket=day' },
    { name: 'usage, chart table open', path: '/usage', act: click('#chart-title ~ details > summary') },
    { name: 'usage, a call’s details open', path: '/usage', act: click('details.call > summary') },
    { name: 'usage, filtered to none', path: '/usage?status=5xx' },
    {
      name: 'usage, older calls',
      path: '/usage',
      act: (page) => page.getByRole('link', { name: 'Older calls' }).click(),
    },
    { name: 'activity', path: '/activity' },
    {
      name: 'activity, older actions',
      path: '/activity',
      act: (page) => page.getByRole('link', { name: 'Older actions' }).click(),
    },
    { name: 'activity of one key', path: () => `/activity?key=${keyId}` },
    { name: 'not found', path: '/keys/key_nope/edit' },
    { name: 'bad request', path: '/keys?status=bogus' },
  ];

  describe.each([1280, 390])('at %i px', (width) => {
    // One tab per width, each state a fresh navigation in it: no renderer started per state.
    let page: Page;
    let errors: string[] = [];
    beforeAll(async () => {
      page = await browser.context.newPage();
      page.on('pageerror', (error) => errors.push(error.message));
      await page.setViewportSize({ width, height: 844 });
    });
    afterAll(() => page?.close());

    it.each(STATES.map((state) => [state.name, state] as const))('%s', async (_name, state) => {
      errors = [];
      const path = typeof state.path === 'function' ? state.path() : state.path;
      const base = path.startsWith('//') ? '' : `/branches/${env.stack.demoBranchId}`;
      await page.goto(`${env.console.origin}${base}${path.replace(/^\/\//, '/')}`);
      await state.act?.(page);
      await page.waitForLoadState('load');
      const audit = await auditPage(page);
      const clientWidth = await page.evaluate(() => (globalThis as any).document.documentElement.clientWidth as number);
      expect({ scrollWidth: audit.scrollWidth, axe: audit.all, duplicateNames: audit.duplicateNames }).toEqual({
        scrollWidth: clientWidth,
        axe: [],
        duplicateNames: [],
      });
      expect(clientWidth).toBeLessThanOrEqual(width);
      if (width < 1024) expect(await smallTargets(page)).toEqual([]);
      expect(errors).toEqual([]);
    });
  });
});
