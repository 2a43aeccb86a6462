/**
 * Settings console render times (docs/console.md): the "API keys" page of a branch with 1,000
 * keys and of a branch with 10,000 keys (every key with calls counted in the rollups, so each
 * shown key costs what a used key costs), and the "API usage" page of a branch with 100,000
 * recorded calls, on the embedded DynamoDB. Each page is timed as the server's full response (median of 5 after a warm-up)
 * and, when a Chromium is found, as a browser navigation until the page (and chart) is drawn.
 *
 *   npx tsx bench/console.ts          (prints figures on stderr, one JSON line on stdout)
 *
 * Also run by `npm run bench` (part "console").
 */
import { startConsole } from '../lib/console/server';
import { startEmbeddedDynamo } from '../lib/local/dynamo';
import { ensureTables } from '../lib/operator/tables';
import { createOperatorContext } from '../lib/operator/context';
import { rebuildRollups } from '../lib/operator/usage-rebuild';
import { CHROMIUM_PATH, launchChromium } from '../scripts/chromium';
import type { UsageRecord } from '../shared/domain/usage-record';
import { padSequence } from '../shared/domain/rollups';
import { demoBranch } from './lib/fixtures';
import { round } from './lib/stats';

const KEYS = 1000;
/** The 10x branch: its first page is measured. */
const MANY_KEYS = 10_000;
const CALLS = 100_000;
const RUNS = 5;
const log = (line: string) => process.stderr.write(`[console bench] ${line}\n`);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

const dynamo = await startEmbeddedDynamo();
const ctx = createOperatorContext({
  DYNAMODB_ENDPOINT: dynamo.endpoint,
  AWS_REGION: 'local',
  KEYS_TABLE: 'bench-console-keys',
  USAGE_TABLE: 'bench-console-usage',
  BRANCH_DATA_TABLE: 'bench-console-branch-data',
  DYNAMODB_DEADLINE_MS: '10000',
});
const keysBranch = demoBranch.id;
const manyKeysBranch = 'br_many_keys_bench';
const usageBranch = 'br_usage_bench';

/** `count` keys of a branch, 50 at a time, each with `calls` calls (one an hour) counted in the rollups. */
const createUsedKeys = async (branchId: string, count: number, calls: number) => {
  const started = Date.now();
  let sequence = 0;
  for (let i = 0; i < count; i += 50) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(50, count - i) }, (_, j) =>
        ctx.keys.create({ branchId, scopes: ['read'], name: `bench key ${i + j}` }),
      ),
    );
    // As the aggregator counts them (no change feed here): hour items and each key's last use.
    const stream = batch.flatMap(({ record }) =>
      Array.from({ length: calls }, (_, c) => ({
        record: {
          key_id: record.key_id,
          branch_id: branchId,
          method: 'GET',
          path: '/api/v1/branch',
          route: 'GET /v1/branch',
          status: 200,
          response_time_ms: 4,
          timestamp: new Date(started - (c + 1) * 3_600_000).toISOString(),
          request_id: `req-${record.key_id}-${c}`,
        },
        source: 'bench|keys',
        sequence: padSequence(String((sequence += 1)))!,
      })),
    );
    const { failed } = await ctx.rollups.apply(stream, 30);
    if (failed.length > 0) throw new Error(`${failed.length} calls could not be counted in the rollups`);
  }
  log(`created ${count} keys with ${calls} call(s) each in the rollups in ${Date.now() - started} ms`);
};

try {
  await ensureTables(ctx.client, ctx.tables);
  await ctx.branchData.putBranch(demoBranch);
  await ctx.branchData.putBranch({ ...demoBranch, id: usageBranch, members: [], payment_providers: [] });

  await ctx.branchData.putBranch({ ...demoBranch, id: manyKeysBranch, members: [], payment_providers: [] });
  await createUsedKeys(keysBranch, KEYS, 3);
  await createUsedKeys(manyKeysBranch, MANY_KEYS, 1);

  // The usage branch's calls: 20 keys, spread over the last 24 hours, 1 in 20 a 4xx, 1 in 200 a 5xx.
  const usageKeys = await Promise.all(
    Array.from({ length: 20 }, (_, i) => ctx.keys.create({ branchId: usageBranch, scopes: ['read'], name: `k${i}` })),
  );
  const started = Date.now();
  const now = Date.now();
  const records: UsageRecord[] = Array.from({ length: CALLS }, (_, i) => ({
    key_id: usageKeys[i % usageKeys.length]!.record.key_id,
    branch_id: usageBranch,
    method: 'GET',
    path: '/api/v1/members',
    route: 'GET /v1/members',
    status: i % 200 === 0 ? 503 : i % 20 === 0 ? 404 : 200,
    response_time_ms: 2 + (i % 37) / 3,
    timestamp: new Date(now - Math.floor((i / CALLS) * 86_000_000)).toISOString(),
    request_id: `req-${i}`,
  }));
  const CHUNK = 2500;
  for (let i = 0; i < records.length; i += CHUNK * 4) {
    await Promise.all(
      [0, 1, 2, 3].map((k) => ctx.usage.putBatch(records.slice(i + k * CHUNK, i + (k + 1) * CHUNK), 1)),
    );
  }
  log(`wrote ${CALLS} usage records with BatchWriteItem in ${Date.now() - started} ms`);
  // Written straight to the table (no change feed here): the chart's rollups are rebuilt from them.
  const rebuilt = Date.now();
  await rebuildRollups(ctx, {
    branchId: usageBranch,
    since: new Date(now - 86_400_000 - 3_600_000).toISOString(),
    // Nothing else writes these records: the current hour is settled already, nothing arrives late.
    settleSeconds: 0,
    maxLagSeconds: 0,
  });
  log(`rebuilt the rollups of ${CALLS} records in ${Date.now() - rebuilt} ms`);

  const settings = await startConsole({ port: 0, ctx, log });
  const launch = await fetch(settings.url, { redirect: 'manual' });
  const cookie = launch.headers.get('set-cookie')!.split(';')[0]!;
  const pages = {
    keys: `/branches/${keysBranch}/keys`,
    keysLastPage: `/branches/${keysBranch}/keys?page=10`,
    keys10k: `/branches/${manyKeysBranch}/keys`,
    usage: `/branches/${usageBranch}/usage?period=24h`,
  };

  const server: Record<string, { medianMs: number; bytes: number; rows: number }> = {};
  for (const [name, path] of Object.entries(pages)) {
    const times: number[] = [];
    let body = '';
    for (let run = 0; run <= RUNS; run += 1) {
      const start = performance.now();
      const response = await fetch(`${settings.origin}${path}`, { headers: { cookie } });
      body = await response.text();
      if (response.status !== 200) throw new Error(`${path} answered ${response.status}: ${body.slice(-300)}`);
      if (run > 0) times.push(performance.now() - start);
    }
    server[name] = { medianMs: round(median(times), 1), bytes: body.length, rows: body.split('<tr>').length - 1 };
    log(`${name} page (server): median ${server[name]!.medianMs} ms, ${body.length} bytes`);
  }

  const browser: Record<string, { medianMs: number }> = {};
  if (CHROMIUM_PATH) {
    const chromium = await launchChromium();
    try {
      // The launch link works once (the fetch above used it): the browser gets that session's cookie.
      const [cookieName, cookieValue] = cookie.split('=') as [string, string];
      await chromium.context.addCookies([{ name: cookieName, value: cookieValue, url: settings.origin }]);
      const page = await chromium.context.newPage();
      for (const [name, path] of Object.entries(pages)) {
        const times: number[] = [];
        for (let run = 0; run <= RUNS; run += 1) {
          const start = performance.now();
          await page.goto(`${settings.origin}${path}`, { waitUntil: 'load' });
          if (name === 'usage') {
            await page.waitForFunction(() =>
              (globalThis as { Chart?: { getChart(id: string): unknown } }).Chart?.getChart('usage-chart'),
            );
          }
          if (run > 0) times.push(performance.now() - start);
        }
        browser[name] = { medianMs: round(median(times), 1) };
        log(`${name} page (Chromium, navigation to drawn): median ${browser[name]!.medianMs} ms`);
      }
    } finally {
      await chromium.close();
    }
  } else {
    log('no Chromium (/usr/bin/chromium or CHROMIUM_PATH): browser figures not measured');
  }
  await settings.close();
  process.stdout.write(`${JSON.stringify({ keys: KEYS, manyKeys: MANY_KEYS, calls: CALLS, server, browser })}\n`);
} catch (error) {
  log(`failed: ${error instanceof Error ? error.stack : String(error)}`);
  process.exitCode = 1;
} finally {
  ctx.close();
  // Let in-flight queries of a failed page finish before the store goes away.
  await new Promise((resolve) => setTimeout(resolve, 200));
  await dynamo.close();
}
