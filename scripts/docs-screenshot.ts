/**
 * Checks that the docs page renders with no network: serves serveDocs() under /api from a
 * throwaway local server, opens /api/docs in headless Chromium (Debian's, through playwright-core),
 * waits for the operations to render, saves a screenshot and fails if the page requested anything
 * outside this server or logged an error. Not part of `npm test` (it needs a Chromium).
 *
 *   npx tsx scripts/docs-screenshot.ts [out.png]     (CHROMIUM=/path/to/chromium to override)
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium } from 'playwright-core';
import { serveDocs } from '../lib/local/docs';

const out = process.argv[2] ?? 'docs-screenshot.png';
const executablePath = process.env.CHROMIUM ?? '/usr/bin/chromium';

const server = createServer((request, response) => {
  const url = new URL(request.url ?? '/', 'http://localhost');
  const found = url.pathname.startsWith('/api/') ? serveDocs(url.pathname.slice('/api'.length)) : undefined;
  if (!found) {
    response.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found');
    return;
  }
  response.writeHead(found.statusCode, found.headers).end(found.body);
});
server.listen(0, '127.0.0.1');
await once(server, 'listening');
const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

const browser = await chromium.launch({
  executablePath,
  args: [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-background-networking',
    '--disable-component-update',
    '--no-first-run',
  ],
});
const problems: string[] = [];
const requested: string[] = [];
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1600 } });
  page.on('request', (request) => {
    requested.push(request.url());
    if (!request.url().startsWith(origin) && !request.url().startsWith('data:')) {
      problems.push(`requested outside the local server: ${request.url()}`);
    }
  });
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console error: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
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
  await browser.close();
  server.close();
}
if (problems.length > 0) {
  console.error(problems.join('\n'));
  process.exit(1);
}
