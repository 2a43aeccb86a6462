/**
 * What a branch manager reads at a glance, in Chromium at 1280 px and 390 px, axe clean: a key
 * found from the start of its value (and from its whole value, which leaves no trace in the
 * address), a revoked key's refused call kept apart from its last use, 50 calls of the usage log
 * within the height budget (one call a row on a laptop, two short lines on a phone), and the
 * activity with an IAM ARN as its actor.
 */
import type { Page } from 'playwright-core';
import { createOperatorContext } from '../../lib/operator/context';
import { launchChromium, type ChromiumSession } from '../../scripts/chromium';
import { auditPage } from '../../scripts/console-audit';
import { padSequence } from '../../shared/domain/rollups';
import type { UsageRecord } from '../../shared/domain/usage-record';
import { describeIfChromium, startEnvironment, type Environment } from './support';

const ARN = 'arn:aws:sts::123456789012:assumed-role/BranchOperators/jane.doe@example.com';
/** The budgets of docs/console.md "API usage": 50 log rows at each width. */
const LOG_HEIGHT_BUDGET = { 1280: 2400, 390: 6000 } as const;

describeIfChromium('the console at a glance', () => {
  let env: Environment;
  let browser: ChromiumSession;
  const ctx = createOperatorContext(process.env);
  let branchId: string;
  let found: { key: string; keyId: string };
  let revokedId: string;
  const usedAt = new Date(Date.now() - 3 * 3_600_000).toISOString();
  const refusedAt = new Date(Date.now() - 2 * 3_600_000).toISOString();

  beforeAll(async () => {
    env = await startEnvironment();
    browser = await launchChromium(undefined, { timezoneId: 'Asia/Kolkata', locale: 'en-US' });
    branchId = env.stack.demoBranchId;
    // Two keys of one name: told apart by the start of their value.
    const twins: { key_id: string }[] = [];
    for (let i = 0; i < 2; i++)
      twins.push((await ctx.keys.create({ branchId, scopes: ['read'], name: 'Till' })).record);
    const created = await ctx.keys.create({ branchId, scopes: ['read'], name: 'Found by value' });
    found = { key: created.key, keyId: created.record.key_id };
    const revoked = (await ctx.keys.create({ branchId, scopes: ['read'], name: 'Old till' })).record;
    revokedId = revoked.key_id;
    const now = Date.now();
    const calls: UsageRecord[] = Array.from({ length: 60 }, (_, i) => ({
      key_id: twins[i % 2]!.key_id,
      branch_id: branchId,
      method: 'GET',
      path:
        i % 5 === 0
          ? `/api/v1/${'unknown-segment/'.repeat(6)}${i}`
          : `/api/v1/payment-providers/pp_${'x'.repeat(40)}${i}`,
      route: i % 5 === 0 ? '$default' : 'GET /v1/payment-providers/{id}',
      status: i % 7 === 0 ? 404 : 200,
      response_time_ms: 10 + i + 0.25,
      timestamp: new Date(now - (i + 1) * 60_000).toISOString(),
      request_id: `6f1c2a4e-3b5d-4c7e-9a8b-${String(i).padStart(12, '0')}`,
      source_ip: '2001:db8:85a3::8a2e:370:7334',
    }));
    // The revoked key: a call it was allowed, then one refused as revoked.
    const accepted = { ...calls[0]!, key_id: revokedId, timestamp: usedAt, request_id: 'req-used' };
    const refused = { ...accepted, status: 401, timestamp: refusedAt, request_id: 'req-refused' };
    await ctx.usage.putBatch([...calls, accepted, refused], 1);
    // Counted in the rollups as the aggregator counts them.
    const stream = [accepted, refused].map((record, i) => ({
      record,
      source: 'test|glance',
      sequence: padSequence(String(i + 1))!,
    }));
    expect((await ctx.rollups.apply(stream, 30)).failed).toEqual([]);
    await ctx.keys.revoke(revokedId, new Date(Date.parse(refusedAt) - 60_000));
    await ctx.activity.put({
      activity_id: `${revokedId}#9`,
      branch_id: branchId,
      key_id: revokedId,
      key_name: 'Old till',
      action: 'rolled',
      actor: ARN,
      at: new Date(now - 60_000).toISOString(),
      changes: { rolled_to: { before: null, after: 'key_new' }, expires_at: { before: null, after: refusedAt } },
      details: { rolled_to: 'key_new' },
    });
    const page = await browser.context.newPage();
    await page.goto(env.console.url);
    await page.close();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await env?.close();
    ctx.close();
  });

  const clean = async (page: Page) => {
    const audit = await auditPage(page);
    const clientWidth = await page.evaluate(() => (globalThis as any).document.documentElement.clientWidth as number);
    expect({ scrollWidth: audit.scrollWidth, axe: audit.all }).toEqual({ scrollWidth: clientWidth, axe: [] });
  };

  describe.each([1280, 390] as const)('at %i px', (width) => {
    let page: Page;
    beforeAll(async () => {
      page = await browser.context.newPage();
      await page.setViewportSize({ width, height: 844 });
    });
    afterAll(() => page?.close());
    const open = (path: string) => page.goto(`${env.console.origin}/branches/${branchId}${path}`);

    it('finds a key from 8 characters of its value, shown as text on the row', async () => {
      await open('/keys');
      await page.getByLabel('Search name, id or key value').fill(found.key.slice(0, 8));
      const rows = page.locator('#keys-results tbody tr');
      // The script applies the search as it is typed.
      await page.waitForFunction(
        () => (globalThis as any).document.querySelectorAll('#keys-results tbody tr').length === 1,
      );
      expect(await rows.first().innerText()).toContain('Found by value');
      expect(
        await rows
          .first()
          .getByText(`${found.key.slice(0, 8)}…`)
          .isVisible(),
      ).toBe(true);
      await clean(page);
    });

    it('finds a key from its whole value without keeping the value in the address', async () => {
      await open(`/keys?q=${found.key}`);
      expect(page.url()).not.toContain(found.key.slice(8));
      expect(await page.locator('#keys-results tbody tr').innerText()).toContain('Found by value');
    });

    it('keeps a revoked key’s refused call out of its last use, on a line of its own', async () => {
      await open(`/keys?q=${revokedId}`);
      const cell = page.locator('#keys-results tbody tr td[data-label="Last used"]');
      expect(await cell.locator('time').first().getAttribute('datetime')).toBe(usedAt);
      const refused = cell.locator('.refused');
      expect(await refused.innerText()).toMatch(/^last refused .+ as revoked$/);
      expect(await refused.locator('time').getAttribute('datetime')).toBe(refusedAt);
      await clean(page);
    });

    it('shows 50 calls within the height budget, one call a row on a laptop, two lines on a phone', async () => {
      await open('/usage');
      const rows = page.locator('#usage-log tbody tr');
      expect(await rows.count()).toBe(50);
      const heights = await rows.evaluateAll((trs) => trs.map((tr) => (tr as any).getBoundingClientRect().height));
      const body = await page.locator('#usage-log tbody').boundingBox();
      expect(body!.height).toBeLessThanOrEqual(LOG_HEIGHT_BUDGET[width]);
      const lineHeight = await page
        .locator('#usage-log tbody tr td[data-label="Route"] code')
        .first()
        .evaluate((code) => (code as any).getBoundingClientRect().height as number);
      // No route wraps: one line each, whatever the path.
      for (const code of await page.locator('#usage-log td[data-label="Route"] code').all())
        expect((await code.boundingBox())!.height).toBeLessThanOrEqual(lineHeight + 1);
      expect(Math.max(...heights)).toBeLessThanOrEqual(width === 1280 ? 2.2 * lineHeight : 60);
      // Same-named keys told apart; routes spelled as the spec spells them.
      const keys = new Set(await page.locator('#usage-log td[data-label="Key"]').allInnerTexts());
      expect([...keys].filter((k) => k.startsWith('Till wsk_'))).toHaveLength(2);
      expect(await page.locator('#usage-log td[data-label="Route"]').allInnerTexts()).toContain(
        'GET /v1/payment-providers/{id}',
      );
      await clean(page);
    });

    it('shows the activity with an IAM ARN short, whole on hover, and each change once', async () => {
      await open(`/activity?key=${revokedId}`);
      const row = page.locator('#activity tbody tr', { hasText: 'rolled' });
      const who = row.locator('td[data-label="Who"] code');
      expect(await who.innerText()).toBe('BranchOperators/jane.doe@example.com');
      expect(await who.getAttribute('title')).toBe(ARN);
      expect((await row.innerText()).match(/rolled_to/g)).toHaveLength(1);
      await clean(page);
    });
  });
});
