/**
 * Screenshots of the settings console for the README: starts the local environment (embedded
 * DynamoDB, demo data, gateway) and a console on free ports, adds a few keys, makes real calls
 * through the gateway, loads a day of generated calls and edits, disables and enables a key, then
 * saves the "API keys" page (with a key just created through the form), the "API usage" page (and
 * a call's details at 1280 px) and the "Activity" page from Debian's Chromium at 1280 px
 * (docs/console-*.png) and 390 px (docs/console-*-phone.png). Prints each page's scrollWidth and axe-core's findings; fails if a
 * page scrolls sideways, has a serious or critical axe violation, requested anything outside the
 * console or logged an error. Not part of `npm test`.
 *
 *   npx tsx scripts/console-screenshots.ts [out-dir] [--verbose]   (default docs/; CHROMIUM_PATH to override;
 *   the local stack's logs go to LOG_FILE or a temporary branch-api.log, and to the terminal with --verbose)
 */
import { basename, join } from 'node:path';
import { startConsole } from '../lib/console/server';
import { startLocalEnvironment } from '../lib/local/environment';
import { logFilePath, routeLogs } from '../lib/local/log-routing';
import { createOperatorContext } from '../lib/operator/context';
import type { UsageRecord } from '../shared/domain/usage-record';
import { openPage } from './chromium';
import { auditPage, type PageAudit } from './console-audit';
import { createKey, disableKey, enableKey, revokeKey, updateKey } from '../lib/operator/keys';

const outDir = process.argv.slice(2).find((arg) => !arg.startsWith('--')) ?? 'docs';
const LAPTOP = 1280;
const PHONE = 390;

// The local stack's request and aggregator logs go to a file, as under `npm start`: the terminal shows the results.
const logs = await routeLogs(await logFilePath(process.env), process.argv.includes('--verbose'));
const stack = await startLocalEnvironment({ port: 0, dynamoPort: 0 });
const ctx = createOperatorContext(process.env);
const settings = await startConsole({ port: 0, branches: [stack.demoBranchId], log: console.error });
const { page, problems, done } = await openPage(settings.origin);
try {
  const branchId = stack.demoBranchId;
  const day = 86_400_000;
  // Through the operator library, as the CLI would: each action is recorded with who did it.
  const pos = await createKey(ctx, { branchId, scopes: ['read'], name: 'POS sync' });
  const expiresAt = new Date(Date.now() + 180 * day);
  const reporting = await createKey(ctx, { branchId, scopes: ['read', 'team:read'], name: 'Reporting job', expiresAt });
  const old = await createKey(ctx, { branchId, scopes: ['read'], name: 'Old integration' });
  await revokeKey(ctx, { branchId, keyId: old.record.key_id });

  // Real calls through the gateway, then a generated day of traffic for the chart.
  for (const path of ['/v1/branch', '/v1/members', '/v1/payment-providers', '/v1/payment-providers/pp_nope'])
    await fetch(`${stack.gateway.baseUrl}${path}`, { headers: { authorization: `Bearer ${pos.key}` } });
  const now = Date.now();
  const routes = ['/v1/branch', '/v1/members', '/v1/payment-providers'];
  const generated: UsageRecord[] = Array.from({ length: 3000 }, (_, i) => {
    const hour = Math.floor((i / 3000) * 24);
    const status = i % 41 === 0 ? 503 : i % 13 === 0 ? 404 : i % 29 === 0 ? 401 : 200;
    const path = routes[i % routes.length]!;
    return {
      key_id: (i % 3 === 0 ? reporting : pos).record.key_id,
      branch_id: branchId,
      method: 'GET',
      path: `/api${path}`,
      route: `GET ${path}`,
      status,
      response_time_ms: Math.round((3 + (i % 17) * 0.7 + (hour % 6)) * 100) / 100,
      timestamp: new Date(now - 3_600_000 - Math.floor((((i * 7919) % 3000) / 3000) * (23 * 3_600_000))).toISOString(),
      request_id: `demo-${i}`,
    };
  });
  await ctx.usage.putBatch(generated, 1);

  // A few actions through the operator library, so the Activity page has a story to tell.
  await updateKey(ctx, { branchId, keyId: reporting.record.key_id, rateLimit: { limit: 20, windowSeconds: 1 } });
  await disableKey(ctx, { branchId, keyId: reporting.record.key_id });
  await enableKey(ctx, { branchId, keyId: reporting.record.key_id });

  await page.goto(settings.url);

  const shots: { file: string; width: number; audit: PageAudit }[] = [];
  const shoot = async (name: string, width: number, fullPage: boolean) => {
    const file = join(outDir, `console-${name}${width === PHONE ? '-phone' : ''}.png`);
    const audit = await auditPage(page);
    await page.screenshot({ path: file, fullPage });
    shots.push({ file, width, audit });
  };
  for (const width of [LAPTOP, PHONE]) {
    await page.setViewportSize({ width, height: width === PHONE ? 844 : 900 });
    await page.goto(`${settings.origin}/branches/${branchId}/keys`);
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByLabel('Name', { exact: true }).fill(width === PHONE ? 'Phone app' : 'Webhook relay');
    await page.getByRole('checkbox', { name: 'webhooks' }).check();
    await page.getByRole('button', { name: 'Create this key' }).click();
    await page.locator('#new-key-value').waitFor();
    if (width === LAPTOP) await shoot('keys', width, true);
    else {
      await auditPage(page).then((audit) => shots.push({ file: '(keys, key just created)', width, audit }));
      // On a phone, the list as cards: the page as it opens.
      await page.goto(`${settings.origin}/branches/${branchId}/keys`);
      await shoot('keys', width, false);
    }

    await page.goto(`${settings.origin}/branches/${branchId}/usage`);
    await page.waitForFunction("window.Chart?.getChart('usage-chart')");
    await shoot('usage', width, false);
    if (width === LAPTOP) {
      // A call's whole record, opened from the log.
      await page.locator('details.call > summary').first().click();
      await page.locator('details.call[open] dl').scrollIntoViewIfNeeded();
      await shoot('usage-call', width, false);
    }

    await page.goto(`${settings.origin}/branches/${branchId}/activity`);
    await shoot('activity', width, false);
  }
  logs.print(`screenshots in ${outDir}/; the local stack's logs in ${logs.file}\n`);
  logs.print('page                              width  scrollWidth  axe serious/critical  axe (any impact)\n');
  for (const { file, width, audit } of shots) {
    logs.print(
      `${basename(file).padEnd(34)}${String(width).padStart(5)}  ${String(audit.scrollWidth).padStart(11)}  ${(audit.serious.join(', ') || 'none').padEnd(20)}  ${audit.all.join(', ') || 'none'}\n`,
    );
    if (audit.serious.length > 0) problems.push(`${file}: axe ${audit.serious.join(', ')}`);
    if (audit.duplicateNames.length > 0)
      problems.push(`${file}: controls share names ${audit.duplicateNames.join(', ')}`);
    if (audit.scrollWidth > audit.innerWidth) problems.push(`${file}: ${audit.scrollWidth} px wide at ${width} px`);
  }
} finally {
  await done();
  await settings.close();
  ctx.close();
  await stack.close();
  await logs.close();
}
