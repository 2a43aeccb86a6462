/**
 * Screenshots of the settings console for the README: starts the local environment (embedded
 * DynamoDB, demo data, gateway) and a console on free ports, adds a few keys, makes real calls
 * through the gateway and loads a day of generated calls, then saves the "API keys" page (with a
 * key just created through the form) and the "API usage" page from Debian's Chromium. Fails if a
 * page requested anything outside the console or logged an error. Not part of `npm test`.
 *
 *   npx tsx scripts/console-screenshots.ts [out-dir]     (default docs/; CHROMIUM_PATH to override)
 */
import { join } from 'node:path';
import { startConsole } from '../lib/console/server';
import { startLocalEnvironment } from '../lib/local/environment';
import { createOperatorContext } from '../lib/operator/context';
import type { UsageRecord } from '../shared/data/repositories/usage';
import { launchChromium } from './chromium';

const outDir = process.argv[2] ?? 'docs';

const stack = await startLocalEnvironment({ port: 0, dynamoPort: 0 });
const ctx = createOperatorContext(process.env);
const settings = await startConsole({ port: 0, branches: [stack.demoBranchId], log: console.error });
const problems: string[] = [];
try {
  const branchId = stack.demoBranchId;
  const day = 86_400_000;
  const pos = await ctx.keys.create({ branchId, scopes: ['read'], name: 'POS sync' });
  const reporting = await ctx.keys.create({
    branchId,
    scopes: ['read', 'team:read'],
    name: 'Reporting job',
    expiresAt: new Date(Date.now() + 180 * day),
  });
  const old = await ctx.keys.create({ branchId, scopes: ['read'], name: 'Old integration' });
  await ctx.keys.revoke(old.record.key_id);

  // Real calls through the gateway, then a generated day of traffic for the chart.
  for (const path of ['/v1/branch', '/v1/members', '/v1/payment-providers', '/v1/payment-providers/pp_nope']) {
    await fetch(`${stack.gateway.baseUrl}${path}`, { headers: { authorization: `Bearer ${pos.key}` } });
  }
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

  const chromium = await launchChromium();
  const page = await chromium.context.newPage();
  page.on('request', (request) => {
    if (!request.url().startsWith(settings.origin) && !request.url().startsWith('data:')) {
      problems.push(`requested outside the console: ${request.url()}`);
    }
  });
  page.on('console', (message) => message.type() === 'error' && problems.push(`console: ${message.text()}`));
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));

  await page.goto(settings.url);
  await page.getByRole('link', { name: 'API keys' }).first().click();
  await page.getByLabel('Name').fill('Webhook relay');
  await page.getByRole('checkbox', { name: 'webhooks' }).check();
  await page.getByRole('button', { name: 'Create key' }).click();
  await page.locator('#new-key-value').waitFor();
  await page.screenshot({ path: join(outDir, 'console-keys.png'), fullPage: true });

  await page.getByRole('link', { name: 'API usage' }).first().click();
  await page.waitForFunction(() =>
    (globalThis as { Chart?: { getChart(id: string): unknown } }).Chart?.getChart('usage-chart'),
  );
  await page.screenshot({ path: join(outDir, 'console-usage.png'), fullPage: false });
  await chromium.close();
  console.log(`screenshots: ${join(outDir, 'console-keys.png')}, ${join(outDir, 'console-usage.png')}`);
} finally {
  await settings.close();
  ctx.close();
  await stack.close();
}
if (problems.length > 0) {
  console.error(problems.join('\n'));
  process.exit(1);
}
