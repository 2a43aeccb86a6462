/**
 * Usage at scale end to end, locally: calls through the gateway reach the rollups through the
 * change feed (lib/local/change-feed.ts) in front of the embedded DynamoDB; another process (the
 * CLI) writing to the usage table is seen too; summary (with "as of"), rebuild and replay
 * through the library and the CLI.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGateway, type Gateway } from '../../lib/local/gateway';
import type { ChangeFeed } from '../../lib/local/change-feed';
import { startUsageChangeFeed } from '../../lib/local/usage-change-feed';
import { createOperatorContext, type OperatorContext } from '../../lib/operator/context';
import { rebuildRollups } from '../../lib/operator/usage-rebuild';
import { summarizeUsage } from '../../lib/operator/usage-rollups';
import { ensureTables } from '../../lib/operator/tables';
import type { UsageRepository } from '../../shared/data/repositories/usage';
import type { UsageRecord } from '../../shared/domain/usage-record';
import { hourOf, totalsOf } from '../../shared/domain/rollups';
import { logger, metrics } from '../../shared/lambda/observability';
import { createUsageAggregator } from '../../shared/lambda/usage-stream';
import { streamEvent, usageChange } from '../../lib/local/stream-events';
import { runCli } from '../support/cli';
import { mainBranch, otherBranch } from '../support/fixtures';
import { createKey, createTables, fixtureClient, fixtureUsage, seedBranches, tableNames } from '../support/harness';

const target = process.env.DYNAMODB_ENDPOINT!;
const rollupsTable = process.env.ROLLUPS_TABLE!;
let feed: ChangeFeed;
let gateway: Gateway;
let ctx: OperatorContext;
let key: string;
let keyId: string;
let otherKeyId: string;
let feedEnv: Record<string, string>;
let viaFeed: UsageRepository;
const startedAt = new Date(Date.now() - 60_000).toISOString();

beforeAll(async () => {
  await createTables();
  await ensureTables(fixtureClient, { rollups: rollupsTable });
  await seedBranches();
  ({
    key,
    record: { key_id: keyId },
  } = await createKey());
  otherKeyId = (await createKey({ branchId: otherBranch.id })).record.key_id;
  feed = await startUsageChangeFeed({ target, usageTable: tableNames.usage });
  // Everything from here on (the handlers, the operator library, the CLI) talks to the feed's endpoint.
  process.env.DYNAMODB_ENDPOINT = feed.endpoint;
  // The CLI runs as a process of its own: not inside this one's Lambda invocation store.
  feedEnv = { DYNAMODB_ENDPOINT: feed.endpoint, AWS_LAMBDA_MAX_CONCURRENCY: undefined as unknown as string };
  // A rebuild's check waits the longest lag: 1 s is ample for the feed here (its window is 200 ms).
  process.env.ROLLUP_MAX_LAG_SECONDS = '1';
  gateway = await startGateway({ port: 0 });
  ctx = createOperatorContext(process.env);
  viaFeed = ctx.usage;
});
afterAll(async () => {
  await gateway.close();
  await feed.close();
  ctx.close();
  process.env.DYNAMODB_ENDPOINT = target;
  delete process.env.ROLLUP_MAX_LAG_SECONDS;
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
    if (totals.calls >= calls) return { totals };
    // Freshness is a bench figure; here only a feed that never delivers fails, after a long wait.
    if (performance.now() - started > 25_000)
      throw new Error(`Rollups show ${totals.calls} of ${calls} calls after 25 s`);
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

    const { totals } = await waitForCalls(mainBranch.id, 30, startedAt);
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

  it('say "as of" the newest call counted', async () => {
    await feed.drain();
    const { as_of } = await summary();
    expect(as_of).toEqual(expect.stringMatching(/^\d{4}-/));
    expect(Date.parse(as_of!)).toBeGreaterThanOrEqual(Date.parse(startedAt));
    const text = await runCli(['usage', 'summary', '--branch', mainBranch.id, '--since', startedAt], feedEnv);
    expect(text.stdout).toContain(`As of ${as_of}`);
  });
});

describe('usage rebuild', () => {
  // A settled hour: it ended more than the settle time (120 s) ago.
  const hour = hourOf(Date.now() - 3 * 3_600_000);
  const inHour = (i: number, requestId = `rebuild-${i}`): UsageRecord => ({
    branch_id: mainBranch.id,
    key_id: keyId,
    method: 'GET',
    path: '/api/v1/members',
    route: 'GET /v1/members',
    status: i % 4 === 0 ? 503 : 200,
    response_time_ms: 4 + (i % 9),
    timestamp: new Date(Date.parse(hour) + i * 1000).toISOString(),
    request_id: requestId,
  });
  const hourTotals = async () =>
    totalsOf(await ctx.rollups.hours({ branchId: mainBranch.id, fromHour: hour, toHour: hour }));

  it('recounts a past hour from the raw records: the same after live aggregation, plus what the feed never saw', async () => {
    // Through the feed (as a replay writes an old call): the aggregator counts them.
    for (let i = 0; i < 40; i += 1) await viaFeed.put(inHour(i), 90);
    await feed.drain();
    expect((await hourTotals()).calls).toBe(40);
    const before = await hourTotals();
    const rebuilt = await rebuildRollups(ctx, { branchId: mainBranch.id, since: hour });
    expect(rebuilt).toMatchObject({ records: 40, items: 1, calls_before: 40, calls_after: 40, busy_hours: [] });
    // The current hour is left to the aggregator (it may still be counting it).
    expect(rebuilt.open_hours).toContain(hourOf(Date.now()));
    expect(await hourTotals()).toEqual(before);

    // Written straight to the embedded DynamoDB, behind the feed's back: only a rebuild counts it.
    await fixtureUsage.put(inHour(41, 'missed-by-the-feed'), 90);
    const until = new Date(Date.parse(hour) + 3_600_000).toISOString();
    const again = await runCli(
      ['usage', 'rebuild', '--branch', mainBranch.id, '--since', hour, '--until', until, '--json'],
      feedEnv,
    );
    expect(again.code).toBe(0);
    expect(again.json).toMatchObject({ records: 41, calls_before: 40, calls_after: 41, open_hours: [] });
    // Piped: no progress on stderr.
    expect(again.stderr).toBe('');
    expect(await hourTotals()).toMatchObject({ calls: 41, by_status_class: { '2xx': 31, '5xx': 10 } });

    // Calls that arrive after a rebuild are counted once, on top of it.
    await viaFeed.put(inHour(42), 90);
    await feed.drain();
    expect((await hourTotals()).calls).toBe(42);
    // And a rebuild of one key only touches that key's items.
    const byKey = await rebuildRollups(ctx, { branchId: mainBranch.id, keyId, since: hour, until });
    expect(byKey).toMatchObject({ records: 42, calls_before: 42, calls_after: 42 });
  });

  it('never counts twice a call it recounted that the stream delivers after the rewrite', async () => {
    const late = hourOf(Date.now() - 5 * 3_600_000);
    const record = { ...inHour(0, 'delivered-late'), timestamp: new Date(Date.parse(late) + 5000).toISOString() };
    // Stored behind the feed's back: its stream record is still "on its way" when the rebuild reads it.
    await fixtureUsage.put(record, 90);
    const aggregate = createUsageAggregator({ rollups: ctx.rollups, retentionDays: 400, logger, metrics });
    let delivered = false;
    const rebuilt = await rebuildRollups(ctx, {
      branchId: mainBranch.id,
      since: late,
      until: new Date(Date.parse(late) + 3_600_000).toISOString(),
      // What happens while the rebuild waits the longest lag: the late stream record arrives.
      wait: async () => {
        if (delivered) return;
        delivered = true;
        const response = await aggregate(streamEvent([usageChange(record, 1)], 'arn:aws:dynamodb:local:0:table/u'));
        expect(response.batchItemFailures).toEqual([]);
      },
    });
    expect(delivered).toBe(true);
    // The aggregator's write moved the item's version: the hour was recounted, once.
    expect(rebuilt).toMatchObject({ records: 1, calls_after: 1, busy_hours: [] });
    expect(totalsOf(await ctx.rollups.hours({ branchId: mainBranch.id, fromHour: late, toHour: late })).calls).toBe(1);
  });
  it('names the hours a rebuild stopped before checking, with the rebuild that repairs them', async () => {
    const stopped = hourOf(Date.now() - 7 * 3_600_000);
    const until = new Date(Date.parse(stopped) + 3_600_000).toISOString();
    await viaFeed.put({ ...inHour(0, 'stopped-1'), timestamp: new Date(Date.parse(stopped) + 1000).toISOString() }, 90);
    await feed.drain();
    // The rebuild stops where it waits for the lag (a fault injected here: a killed process's
    // kill tests are test/local/usage-kill-*.test.ts).
    const stop = new Error('stopped');
    await expect(
      rebuildRollups(ctx, { branchId: mainBranch.id, since: stopped, until, wait: () => Promise.reject(stop) }),
    ).rejects.toBe(stop);
    const repair = `branch-api usage rebuild --branch ${mainBranch.id} --since ${stopped} --until ${until}`;
    const summarize = ['usage', 'summary', '--branch', mainBranch.id, '--since', stopped, '--until', until];
    const json = await runCli([...summarize, '--json'], feedEnv);
    expect(json.json.unverified).toEqual({ hours: [stopped], repair });
    const text = await runCli(summarize, feedEnv);
    expect(text.stdout).toContain(`Warning: 1 hour(s) are not verified`);
    expect(text.stdout).toContain(`Repair: ${repair}`);
    // The repair: the rebuild run again, to the end.
    const repaired = await runCli([...repair.split(' ').slice(1), '--json'], feedEnv);
    expect(repaired.json).toMatchObject({ records: 1, calls_after: 1, busy_hours: [] });
    expect((await runCli([...summarize, '--json'], feedEnv)).json).toMatchObject({
      unverified: null,
      totals: { calls: 1 },
    });
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
  const failed = (i: number, overrides: Partial<UsageRecord> = {}): UsageRecord => ({
    branch_id: otherBranch.id,
    key_id: otherKeyId,
    method: 'GET',
    path: '/api/v1/branch',
    route: 'GET /v1/branch',
    status: 200,
    response_time_ms: 3.5,
    timestamp: new Date(now - i * 1000).toISOString(),
    request_id: `replayed-${i}`,
    ...overrides,
  });
  const line = (record: unknown) =>
    JSON.stringify({ level: 'ERROR', message: 'Usage record not stored', usage_record: record, error: {} });

  it('writes back each failed record once, only into its own key and branch, reporting bad lines by number', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'replay-'));
    const file = join(dir, 'function.log');
    await writeFile(
      file,
      [
        JSON.stringify({ level: 'INFO', message: 'Usage recorded', usage_record: failed(9) }),
        line(failed(1)),
        'not json at all',
        `2027-01-01T00:00:00.000Z\tabc\t${line(failed(2))}`,
        line({ ...failed(4), status: 'teapot' }), // line 5: not a usage record
        line(failed(5, { key_id: keyId })), // line 6: a key of another branch
        line(failed(6, { key_id: 'key_nowhere' })), // line 7: no such key
        line(failed(3)),
        line(failed(1)), // logged twice (a retried invocation)
        line(failed(0, { timestamp: new Date(now - 100 * 86_400_000).toISOString() })), // line 10: past retention
      ].join('\n'),
    );

    const first = await runCli(['usage', 'replay', file, '--json'], feedEnv);
    expect(first.code).toBe(1);
    // The record logged twice is written once.
    expect(first.json).toMatchObject({ found: 7, stored: 3, already_stored: 1, skipped_count: 4 });
    expect(first.json.skipped).toEqual([
      { line: 5, reason: expect.stringMatching(/not a valid usage record \(status\)/) },
      { line: 6, reason: 'the key belongs to another branch' },
      { line: 7, reason: 'unknown key' },
      { line: 10, reason: 'older than usage records are kept (90 days)' },
    ]);
    await feed.drain();

    const again = await runCli(['usage', 'replay', file], feedEnv);
    expect(again.stdout).toMatch(/Replayed 0 usage record\(s\) from 10 log line\(s\) \(4 stored already\)/);
    expect(again.stdout).toMatch(/Skipped line 6: the key belongs to another branch/);
    const resumed = await runCli(['usage', 'replay', file, '--from-line', '8', '--json'], feedEnv);
    expect(resumed.json).toMatchObject({ lines: 3, found: 3, stored: 0, skipped_count: 1 });
    await feed.drain();
    const stored = await fixtureUsage.query({ branchId: otherBranch.id, limit: 100 });
    expect(stored.records.map((r) => r.request_id).sort()).toEqual(['replayed-1', 'replayed-2', 'replayed-3']);
    expect(
      (await fixtureUsage.query({ branchId: mainBranch.id, since: new Date(now - 10_000), limit: 100 })).records.map(
        (r) => r.request_id,
      ),
    ).not.toContain('replayed-5');
    const hours = await ctx.rollups.hours({ branchId: otherBranch.id, fromHour: '2000', toHour: '2100' });
    expect(hours.reduce((n, h) => n + h.calls, 0)).toBe(3);
  });
});

describe('usage summary (CLI)', () => {
  it('prints totals and buckets from the rollups, and the raw log command still works', async () => {
    const json = await runCli(['usage', 'summary', '--branch', mainBranch.id, '--since', startedAt, '--json'], feedEnv);
    expect(json.code).toBe(0);
    expect(json.json.totals.calls).toBe(30);
    expect(json.json.as_of).toEqual(expect.any(String));
    expect(json.json.set_aside).toBeNull();
    expect(json.json.items_read).toBeLessThanOrEqual(2); // one key, at most two hours
    // One bucket per hour of the period, empty ones included, adding up to the totals.
    const byHour = await summarizeUsage(ctx, { branchId: mainBranch.id, since: startedAt, by: 'hour' });
    expect(byHour.buckets.map((b) => b.start)).toEqual(
      Array.from({ length: (Date.parse(byHour.until) - Date.parse(byHour.since)) / 3_600_000 }, (_, i) =>
        new Date(Date.parse(byHour.since) + i * 3_600_000).toISOString(),
      ),
    );
    expect(byHour.buckets.reduce((n, b) => n + b.calls, 0)).toBe(30);
    const byDay = await summarizeUsage(ctx, { branchId: mainBranch.id, since: '2026-01-01', until: '2026-01-03' });
    expect(byDay.buckets.map((b) => [b.start, b.calls])).toEqual([
      ['2026-01-01T00:00:00.000Z', 0],
      ['2026-01-02T00:00:00.000Z', 0],
    ]);
    const text = await runCli(
      ['usage', 'summary', '--branch', mainBranch.id, '--key', keyId, '--by', 'hour', '--since', startedAt],
      feedEnv,
    );
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/30 call\(s\) — 2xx: 24, 4xx: 6/);
    expect(text.stdout).toContain('GET /v1/branch');
    const log = await runCli(['usage', '--branch', mainBranch.id, '--limit', '3', '--json'], feedEnv);
    expect(log.code).toBe(0);
    expect(log.json.records).toHaveLength(3);
  });

  it.each([
    [['--since', 'last tuesday'], /--since must be an ISO 8601/],
    [['--since', '2027-02-01', '--until', '2027-01-01'], /--until .* must be after the start of the period/],
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
      // Raw records older than the retention are gone: a recount would erase the rollups.
      ['usage', 'rebuild', '--branch', mainBranch.id, '--since', new Date(Date.now() - 100 * 86_400_000).toISOString()],
      ['usage', 'replay', '/no/such/file.log'],
      ['usage'],
      ['usage', 'summary', '--branch', 'br_nowhere'],
    ]) {
      const result = await runCli(args, feedEnv);
      expect([args, result.code]).toEqual([args, 1]);
    }
  });
});
