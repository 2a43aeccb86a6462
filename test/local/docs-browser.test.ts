/**
 * The docs page in a real browser (headless Chromium through playwright-core), against the local
 * environment on random ports: "Try it out" → Execute on GET /v1/branch with the demo key gets a
 * 200 from this gateway, and a web page cannot reach the embedded DynamoDB.
 *
 * Needs a Chromium (`apt-get install chromium`; CHROMIUM=/path/to/chromium to override): without
 * one, these tests are skipped and say so.
 */
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type Page } from 'playwright-core';
import { serveDocs } from '../../lib/local/docs';
import { startLocalEnvironment, type LocalEnvironment } from '../../lib/local/environment';

const executablePath = process.env.CHROMIUM ?? '/usr/bin/chromium';
const hasChromium = existsSync(executablePath);
if (!hasChromium) console.warn(`No Chromium at ${executablePath}: the docs page browser tests are skipped.`);
const describeWithChromium = hasChromium ? describe : describe.skip;

/** Any web page: an empty one on its own origin. */
const startPageServer = async () => {
  const seen: string[] = [];
  const server = createServer((request, response) => {
    seen.push(`${request.method} ${request.url}`);
    response
      .writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' })
      .end('<!doctype html><title>any page</title>');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    requests: () => seen.filter((line) => line !== 'GET /favicon.ico'),
    close: () => server.close(),
  };
};

describeWithChromium('the docs page in Chromium', () => {
  const savedEnv = { ...process.env };
  let environment: LocalEnvironment;
  let browser: Browser;
  let origin: string;
  let pageServer: { url: string; requests(): string[]; close(): void };

  beforeAll(async () => {
    environment = await startLocalEnvironment({ port: 0, dynamoPort: 0, staticFiles: serveDocs });
    origin = new URL(environment.gateway.baseUrl).origin;
    pageServer = await startPageServer();
    browser = await chromium.launch({
      executablePath,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
    });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await environment?.close();
    pageServer?.close();
    process.env = savedEnv;
  });

  /** A fresh page that records what it requested and every error it logged. */
  const openPage = async () => {
    const page = await browser.newPage();
    const requested: string[] = [];
    const problems: string[] = [];
    page.on('request', (request) => requested.push(`${request.method()} ${request.url()}`));
    page.on('console', (message) => message.type() === 'error' && problems.push(message.text()));
    page.on('pageerror', (error) => problems.push(error.message));
    return { page, requested, problems };
  };

  const authorize = async (page: Page, key: string) => {
    await page.locator('.auth-wrapper button.authorize').click();
    await page.locator('.modal-ux input[type=text], .modal-ux input[type=password]').first().fill(key);
    await page.locator('.modal-ux .auth-btn-wrapper button.authorize').click();
    await page.locator('.modal-ux button.btn-done').click();
  };

  it('"Try it out" on GET /v1/branch with the demo key gets a 200 from this gateway', async () => {
    expect(origin).not.toBe('http://127.0.0.1:3000');
    const { page, requested, problems } = await openPage();
    try {
      await page.goto(`${environment.gateway.baseUrl}/docs`, { waitUntil: 'load' });
      await page.waitForSelector('.opblock', { timeout: 20_000 });
      // The server list: this server first, the deployed one kept, no Markdown backticks.
      const servers = await page.$$eval('.servers select option', (nodes) => nodes.map((node) => node.textContent));
      expect(servers[0]).toMatch(/^\/api\b.*This server/);
      expect(servers.some((server) => server?.includes('execute-api'))).toBe(true);
      expect(servers.join('\n')).not.toContain('`');

      await authorize(page, environment.demoKey);
      const operation = page.locator('.opblock-get', {
        has: page.locator('.opblock-summary-path', { hasText: /^\/v1\/branch$/ }),
      });
      await operation.locator('.opblock-summary').click();
      await operation.locator('button.try-out__btn').click();
      await operation.locator('button.execute').click();
      const status = operation.locator('.live-responses-table .response .response-col_status').first();
      await status.waitFor({ timeout: 20_000 });
      expect((await status.textContent())?.trim()).toBe('200');
      const body = await operation.locator('.live-responses-table .response-col_description pre').first().textContent();
      expect(JSON.parse(body ?? '')).toMatchObject({ object: 'branch', id: environment.demoBranchId });
      expect(requested).toContain(`GET ${origin}/api/v1/branch`);
      expect(requested.filter((url) => !url.includes(`${origin}/`) && !url.includes(' data:'))).toEqual([]);
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
  }, 60_000);

  it("a web page's script cannot call the embedded DynamoDB", async () => {
    const { page } = await openPage();
    try {
      // A page of another site on this machine (so no private-network rule of the browser gets in the way).
      await page.goto(pageServer.url);
      const outcome = await page.evaluate(async (endpoint) => {
        try {
          const response = await fetch(endpoint, {
            method: 'POST',
            headers: {
              'Content-Type': 'application/x-amz-json-1.0',
              'X-Amz-Target': 'DynamoDB_20120810.ListTables',
              // Any signature will do for dynalite.
              'X-Amz-Date': '20260101T000000Z',
              Authorization:
                'AWS4-HMAC-SHA256 Credential=x/20260101/local/dynamodb/aws4_request, SignedHeaders=host, Signature=0',
            },
            body: '{}',
          });
          return `answered ${response.status}: ${await response.text()}`;
        } catch (error) {
          return `refused: ${String(error)}`;
        }
      }, environment.dynamoEndpoint);
      expect(outcome).toMatch(/^refused: TypeError/);
      expect(pageServer.requests()).toEqual(['GET /']);
    } finally {
      await page.close();
    }
  });
});
