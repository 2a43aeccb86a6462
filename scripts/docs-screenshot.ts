/**
 * Checks that the docs page renders with no network: serves serveDocs() under /api from a
 * throwaway local server, opens /api/docs in headless Chromium (scripts/chromium.ts), waits for
 * the operations to render, saves a screenshot and fails if the page requested anything outside
 * this server or logged an error. Not part of `npm test` (it needs a Chromium).
 *
 *   npx tsx scripts/docs-screenshot.ts [out.png]     (CHROMIUM_PATH=/path/to/chromium to override)
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serveDocs } from '../lib/local/docs';
import { openPage } from './chromium';

const out = process.argv[2] ?? 'docs-screenshot.png';

const server = createServer((request, response) => {
  const path = new URL(request.url ?? '/', 'http://localhost').pathname;
  const found = path.startsWith('/api/') ? serveDocs(path.slice('/api'.length)) : undefined;
  if (found) response.writeHead(found.statusCode, found.headers).end(found.body);
  else response.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found');
}).listen(0, '127.0.0.1');
await once(server, 'listening');
const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

const { page, done } = await openPage(origin, { width: 1280, height: 1600 });
const requested: string[] = [];
page.on('request', (request) => requested.push(request.url()));
try {
  await page.goto(`${origin}/api/docs`, { waitUntil: 'load' });
  await page.waitForSelector('.swagger-ui .info .title', { timeout: 15_000 });
  await page.waitForSelector('.opblock', { timeout: 15_000 });
  const title = (await page.textContent('.swagger-ui .info .title'))?.trim();
  const operations = await page.$$eval('.opblock-summary-path', (nodes) => nodes.map((node) => node.textContent));
  // Open one operation so the screenshot shows its parameters and responses too.
  await page.locator('.opblock-summary-path', { hasText: '/v1/payment-providers/{id}' }).click();
  await page.waitForSelector('.opblock.is-open .responses-table', { timeout: 15_000 });
  await page.screenshot({ path: out, fullPage: false });
  // And the responses of that operation: statuses, error codes, headers.
  const responses = out.replace(/\.png$/, '') + '-responses.png';
  await page.locator('.opblock.is-open .responses-wrapper').screenshot({ path: responses });
  console.log(`title: ${title}`);
  console.log(`operations: ${operations.join(', ')}`);
  console.log(`requests: ${requested.map((url) => url.replace(origin, '')).join(', ')}`);
  console.log(`screenshots: ${out}, ${responses}`);
} finally {
  await done();
  server.close();
}
