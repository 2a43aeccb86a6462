/**
 * Usage at scale end to end, locally: calls through the gateway reach the rollups through the
 * change feed (lib/local/change-feed.ts) in front of the embedded DynamoDB; another process (the
 * CLI) writing to the usage table is seen too; summary, rebuild and replay through the library
 * and the CLI.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGateway, type Gateway } from '../../lib/local/gateway';
import { startUsageChangeFeed, type ChangeFeed } from '../../lib/local/change-feed';
import { createOperatorContext, type OperatorContext } from '../../lib/operator/context';
import { rebuildRollups } from '../../lib/operator/usage-rebuild';
import { summarizeUsage } from '../../lib/operator/usage-rollups';
import { ensureTables } from '../../lib/operator/tables';
import type { UsageRecord } from '../../shared/data/repositories/usage';
import { hourOf, totalsOf } from '../../shared/domain/rollups';
import { runCli } from '../support/cli';
import { mainBranch } from '../support/fixtures';
import { createKey, createTables, fixtureClient, fixtureUsage, seedBranches, tableNames } from '../support/harness';

const target = process.env.DYNAMODB_ENDPOINT!;
const rollupsTable = process.env.ROLLUPS_TABLE!;
let feed: ChangeFeed;
let gateway: Gateway;
let ctx: OperatorContext;
let key: string;
let keyId: string;
let feedEnv: Record<string, string>;
const startedAt = new Date(Date.now() - 60_000).toISOString();

beforeAll(async () => {
  await createTables();
  await ensureTables(fixtureClient, { rollups: rollupsTable });
  await seedBranches();
  ({
    key,
    record: { key_id: keyId },
  } = await createKey());
  feed = await startUsageChangeFeed({ target, usageTable: tableNames.usage });
  // Everything from here on (the handlers, the operator library, the CLI) talks to the feed's endpoint.
  process.env.DYNAMODB_ENDPOINT = feed.endpoint;
  // The CLI runs as a process of its own: not inside this one's Lambda invocation store.
  feedEnv = { DYNAMODB_ENDPOINT: feed.endpoint, AWS_LAMBDA_MAX_CONCURRENCY: undefined as unknown as string };
  gateway = await startGateway({ port: 0 });
  ctx = createOperatorContext(process.env);
});
afterAll(async () => {
  await gateway.close();
  await feed.close();
  ctx.close();
  process.env.DYNAMODB_ENDPOINT = target;
});

const call = (path: string) =>
  fetch(`${gateway.baseUrl}${path}`, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.status);

const summary = () => summarizeUsage(ctx, { branchId: mainBranch.id, since: startedAt, by: 'hour' });

/** Polls until the rollups count `calls`; returns how long it took. */
const waitForCalls = async (branchId: string, calls: number, sinceIso: string) => {
  const started = performance.now();
  for (;;) {
    const totals = totalsOf(
      await ctx.rollups.hours({ branchId, fromHour: hourOf(sinceIso), toHour: hourOf(Date.now()) }),
    );
    if (totals.calls >= calls) return { ms: performance.now() - started, totals };
    if (performance.now() - started > 5000) throw new Error(`Rollups show ${totals.calls} of ${calls} calls after 5 s`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
};

describe('calls through the gateway', () => {
  it('are all in the summary, with the right status split', async () => {
    const statuses = [
      ...(await Promise.all(Array.from({ length: 20 }, () => call('/v1/branch')))),
      ...(await Promise.all(Array.from({ length: 6 }, () => call('/v1/payment-providers/pp_nowhere')))),
      ...(await Promise.all(Array.from({ length: 4 }, () => call('/v1/members')))),
    ];
    expect(statuses.filter((s) => s === 200)).toHaveLength(24);
    expect(statuses.filter((s) => s === 404)).toHaveLength(6);

    const { ms, totals } = await waitForCalls(mainBranch.id, 30, startedAt);
    expect(ms).toBeLessThan(5000);
    expect(totals).toMatchObject({
      calls: 30,
      by_status_class: { '2xx': 24, '4xx': 6 },
      by_status: { 200: 24, 404: 6 },
    });
    expect(totals.top_routes).toEqual([
      { route: 'GET /v1/branch', calls: 20 },
      { route: 'GET /v1/payment-providers/{id}', calls: 6 },
      { route: 'GET /v1/members', calls: 4 },
    ]);
    expect(totals.p50_ms).toEqual(expect.any(Number));

    const listing = await runCli(['keys', 'list', '--branch', mainBranch.id, '--json'], feedEnv);
    expect(listing.json.find((k: { key_id: string }) => k.key_id === keyId).last_used_at).toEqual(
      expect.stringMatching(/^\d{4}-/),
    );
  });

  it('rebuild after live aggregation leaves the same totals, and adds a call the feed never saw', async () => {
    const before = await summary();
    await feed.drain();
    const rebuilt = await rebuildRollups(ctx, { branchId: mainBranch.id, since: startedAt });
    expect(rebuilt).toMatchObject({ records: 30, added: 0, already_counted: 30 });
    expect((await summary()).totals).toEqual(before.totals);

    // Written straight to the embedded DynamoDB, behind the feed's back: only a rebuild counts it.
    await fixtureUsage.put(
      {
        branch_id: mainBranch.id,
        key_id: keyId,
        method: 'GET',
        path: '/api/v1/branch',
        route: 'GET /v1/branch',
        status: 503,
        response_time_ms: 12,
        timestamp: new Date().toISOString(),
        request_id: 'missed-by-the-feed',
      },
      90,
    );
    const again = await runCli(
      ['usage', 'rebuild', '--branch', mainBranch.id, '--since', startedAt, '--json'],
      feedEnv,
    );
    expect(again.code).toBe(0);
    expect(again.json).toMatchObject({ records: 31, added: 1, already_counted: 30 });
    expect((await summary()).totals).toMatchObject({ calls: 31, by_status_class: { '2xx': 24, '4xx': 6, '5xx': 1 } });
  });
});

describe('the change feed endpoint', () => {
  it('refuses what a web page could send it (an Origin, a CORS preflight)', async () => {
    const body = JSON.stringify({ TableName: tableNames.usage, Item: { branch_id: { S: 'br_web' }, sk: { S: 'x' } } });
    const headers = { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'DynamoDB_20120810.PutItem' };
    const fromPage = await fetch(feed.endpoint, {
      method: 'POST',
      headers: { ...headers, origin: 'https://evil.example' },
      body,
    });
    expect(fromPage.status).toBe(403);
    expect((await fetch(feed.endpoint, { method: 'OPTIONS' })).status).toBe(403);
    expect((await fixtureUsage.query({ branchId: 'br_web', limit: 10 })).records).toEqual([]);
  });
});

describe('usage replay', () => {
  const now = Date.now();
  const failed = (i: number): UsageRecord => ({
    branch_id: 'br_replay',
    key_id: 'key_replay',
    method: 'GET',
    path: '/api/v1/branch',
    route: 'GET /v1/branch',
    status: 200,
    response_time_ms: 3.5,
    timestamp: new Date(now - i * 1000).toISOString(),
    request_id: `replayed-${i}`,
  });

  it('writes back each failed record once, through another process, and the feed counts it once', async () => {
    const line = (record: UsageRecord) =>
      JSON.stringify({ level: 'ERROR', message: 'Usage record not stored', usage_record: record, error: {} });
    const dir = await mkdtemp(join(tmpdir(), 'replay-'));
    const file = join(dir, 'function.log');
    await writeFile(
      file,
      [
        JSON.stringify({ level: 'INFO', message: 'Usage recorded', usage_record: failed(9) }),
        line(failed(1)),
        'not json at all',
        `2027-01-01T00:00:00.000Z\tabc\t${line(failed(2))}`,
        line(failed(3)),
        line(failed(1)), // logged twice (a retried invocation)
      ].join('\n'),
    );
    const sinceIso = new Date(Date.now() - 3_600_000).toISOString();

    const first = await runCli(['usage', 'replay', file, '--json'], feedEnv);
    expect(first.code).toBe(0);
    expect(first.json).toMatchObject({ found: 4, stored: 4, invalid_lines: [] });
    const { ms } = await waitForCalls('br_replay', 3, sinceIso);
    expect(ms).toBeLessThan(5000);

    const again = await runCli(['usage', 'replay', file], feedEnv);
    expect(again.code).toBe(0);
    await feed.drain();
    const stored = await fixtureUsage.query({ branchId: 'br_replay', limit: 100 });
    expect(stored.records.map((r) => r.request_id).sort()).toEqual(['replayed-1', 'replayed-2', 'replayed-3']);
    const hours = await ctx.rollups.hours({ branchId: 'br_replay', fromHour: '2000', toHour: '2100' });
    expect(hours.reduce((n, h) => n + h.calls, 0)).toBe(3);
  });
});

describe('usage summary (CLI)', () => {
  it('prints totals and buckets from the rollups, and the raw log command still works', async () => {
    const json = await runCli(['usage', 'summary', '--branch', mainBranch.id, '--since', startedAt, '--json'], feedEnv);
    expect(json.code).toBe(0);
    expect(json.json.totals.calls).toBe(31);
    expect(json.json.items_read).toBeLessThanOrEqual(2); // one key, at most two hours
    // One bucket per hour of the period, empty ones included, adding up to the totals.
    const byHour = await summarizeUsage(ctx, { branchId: mainBranch.id, since: startedAt, by: 'hour' });
    expect(byHour.buckets.map((b) => b.start)).toEqual(
      Array.from({ length: (Date.parse(byHour.until) - Date.parse(byHour.since)) / 3_600_000 }, (_, i) =>
        new Date(Date.parse(byHour.since) + i * 3_600_000).toISOString(),
      ),
    );
    expect(byHour.buckets.reduce((n, b) => n + b.calls, 0)).toBe(31);
    const byDay = await summarizeUsage(ctx, { branchId: mainBranch.id, since: '2026-01-01', until: '2026-01-03' });
    expect(byDay.buckets.map((b) => [b.start, b.calls])).toEqual([
      ['2026-01-01T00:00:00.000Z', 0],
      ['2026-01-02T00:00:00.000Z', 0],
    ]);
    const text = await runCli(['usage', 'summary', '--branch', mainBranch.id, '--key', keyId, '--by', 'hour'], feedEnv);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/31 call\(s\) — 2xx: 24, 4xx: 6, 5xx: 1/);
    expect(text.stdout).toContain('GET /v1/branch');
    const log = await runCli(['usage', '--branch', mainBranch.id, '--limit', '3', '--json'], feedEnv);
    expect(log.code).toBe(0);
    expect(log.json.records).toHaveLength(3);
  });

  it.each([
    [['--since', 'last tuesday'], /--since must be an ISO 8601/],
    [['--since', '2027-02-01', '--until', '2027-01-01'], /--until .* must be after --since/],
    [['--key', 'key_nowhere'], /Unknown key id "key_nowhere"/],
    [['--by', 'week'], /argument 'week' is invalid/],
  ])('refuses %j with exit 1', async (args, message) => {
    const result = await runCli(['usage', 'summary', '--branch', mainBranch.id, ...args], feedEnv);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(message);
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });

  it('refuses rebuild without --since, replay of a missing file, and the log without --branch', async () => {
    for (const args of [
      ['usage', 'rebuild', '--branch', mainBranch.id],
      ['usage', 'replay', '/no/such/file.log'],
      ['usage'],
      ['usage', 'summary', '--branch', 'br_nowhere'],
    ]) {
      const result = await runCli(args, feedEnv);
      expect([args, result.code]).toEqual([args, 1]);
    }
  });
});
