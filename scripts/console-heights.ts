/**
 * Page heights of the settings console with many keys: starts the local environment and a
 * console on free ports, creates 70 keys (each recorded in the activity), then prints the
 * height of the keys page at 1280 and 390 px and of the activity page at 390 px (docs/console.md
 * "Widths and accessibility"). Not part of `npm test`.
 *
 *   npx tsx scripts/console-heights.ts
 */
import { startConsole } from '../lib/console/server';
import { startLocalEnvironment } from '../lib/local/environment';
import { createOperatorContext } from '../lib/operator/context';
import { createKey } from '../lib/operator/keys';
import { openPage } from './chromium';

const KEYS = 70;
const stack = await startLocalEnvironment({ port: 0, dynamoPort: 0 });
const ctx = createOperatorContext(process.env);
const settings = await startConsole({ port: 0, branches: [stack.demoBranchId], log: console.error });
const { page, done } = await openPage(settings.origin);
try {
  const branchId = stack.demoBranchId;
  for (let i = 1; i <= KEYS; i++) await createKey(ctx, { branchId, scopes: ['read'], name: `Till ${i}` });
  await page.goto(settings.url);
  const heights: Record<string, number> = {};
  for (const [name, path, width] of [
    ['keys at 1280', 'keys', 1280],
    ['keys at 390', 'keys', 390],
    ['activity at 390', 'activity', 390],
  ] as const) {
    await page.setViewportSize({ width, height: width === 390 ? 844 : 900 });
    await page.goto(`${settings.origin}/branches/${branchId}/${path}`);
    if (process.argv.includes('--shots'))
      await page.screenshot({ path: `/tmp/heights-${name.replace(/ /g, '-')}.png` });
    heights[name] = await page.evaluate<number>('document.documentElement.scrollHeight');
  }
  console.log(JSON.stringify(heights));
} finally {
  await done();
  await settings.close();
  ctx.close();
  await stack.close();
}
