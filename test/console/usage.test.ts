/**
 * The "API usage" page and its CSV over raw HTTP with a real session: the summary's total, the
 * chart's bars and the CSV count the same calls for the same period (the period starts on a whole
 * hour, as the rollups count); the status and route filters select the same rows in the log and
 * the CSV; the CSV neutralises what a caller sent (formula prefixes, NUL, bidi controls).
 */
import type { UsageRecord } from '../../shared/domain/usage-record';
import { createOperatorContext } from '../../lib/operator/context';
import { rebuildRollups } from '../../lib/operator/usage-rebuild';
import { rawRequest, sessionCookie, startEnvironment, type Environment } from './support';

let env: Environment;
const ctx = createOperatorContext(process.env);
const BRANCH = 'br_second';
const HOUR = 3_600_000;
const now = Date.now();
/** Where a 24-hour period that starts now starts: on the hour. */
const periodStart = (() => {
  const start = now - 24 * HOUR;
  return start - (start % HOUR);
})();
let keyId: string;
let records: UsageRecord[];

const record = (i: number, at: number, status: number, route: string, path = route.slice(4)): UsageRecord => ({
  key_id: keyId,
  branch_id: BRANCH,
  method: 'GET',
  path: `/api${path}`,
  route,
  status,
  response_time_ms: 5 + i,
  timestamp: new Date(at).toISOString(),
  request_id: `req-usage-${String(i).padStart(3, '0')}`,
});

beforeAll(async () => {
  env = await startEnvironment();
  keyId = (await ctx.keys.create({ branchId: BRANCH, scopes: ['read'], name: 'usage page' })).record.key_id;
  records = [
    // Before the period: in neither the chart nor the CSV.
    record(0, periodStart - 60_000, 200, 'GET /v1/branch'),
    // In the period's first (partial) hour, which the rollups count whole: in both.
    record(1, periodStart, 200, 'GET /v1/branch'),
    ...Array.from({ length: 30 }, (_, i) =>
      record(
        i + 2,
        now - (i + 1) * 40 * 60_000,
        [200, 404, 503][i % 3]!,
        i % 2 ? 'GET /v1/members' : 'GET /v1/payment-providers/{id}',
        i % 2 ? '/v1/members' : `/v1/payment-providers/pp_${i}`,
      ),
    ),
    record(40, now - 5 * 60_000, 404, '$default', '/=HYPERLINK("x")\u0000\u202eevil'),
  ];
  await ctx.usage.putBatch(records, 1);
  // Nothing else writes these records: no hour needs to settle, nothing arrives late.
  await rebuildRollups(ctx, {
    branchId: BRANCH,
    since: new Date(periodStart - 2 * HOUR).toISOString(),
    settleSeconds: 0,
    maxLagSeconds: 0,
  });
}, 60_000);
afterAll(async () => {
  await env.close();
  ctx.close();
});

const get = async (path: string) =>
  rawRequest(env.console.origin, path, { headers: { cookie: await sessionCookie(env.console) } });

const csvLines = async (query: string) => {
  const response = await get(`/branches/${BRANCH}/usage.csv?${query}`);
  expect(response.status).toBe(200);
  return response.body.trimEnd().split('\r\n').slice(1);
};

it('counts the same calls in the summary, the chart and the CSV for the same period', async () => {
  const inPeriod = records.filter((r) => Date.parse(r.timestamp) >= periodStart).length;
  const page = await get(`/branches/${BRANCH}/usage?key=${keyId}&period=24h`);
  expect(page.status).toBe(200);
  const total = Number(/<p id="usage-summary">\s*<strong>(\d+)<\/strong>/.exec(page.body)![1]);
  const chart = JSON.parse(/id="usage-chart-data">(.*?)<\/script>/s.exec(page.body)![1]!) as {
    counts: Record<string, number[]>;
  };
  const bars = Object.values(chart.counts)
    .flat()
    .reduce((a, b) => a + b, 0);
  const csv = await csvLines(`key=${keyId}&period=24h`);
  expect({ total, bars, csv: csv.length }).toEqual({ total: inPeriod, bars: inPeriod, csv: inPeriod });
  expect(csv.some((line) => line.includes('req-usage-000'))).toBe(false);
  expect(csv.some((line) => line.includes('req-usage-001'))).toBe(true);
});

it('selects the same calls, newest first, in the log and the CSV when filtered by status and route', async () => {
  const route = 'GET /v1/payment-providers/{id}';
  const expected = records
    .filter((r) => r.status >= 500 && r.route === route && Date.parse(r.timestamp) >= periodStart)
    .sort((a, b) => b.timestamp.localeCompare(a.timestamp))
    .map((r) => r.request_id);
  expect(expected.length).toBeGreaterThan(1);
  const query = `status=5xx&route=${encodeURIComponent(route)}`;
  const page = await get(`/branches/${BRANCH}/usage?${query}`);
  const logged = [...page.body.matchAll(/<tr data-request-id="([^"]+)"/g)].map((m) => m[1]);
  expect(logged).toEqual(expected);
  expect((await csvLines(query)).map((line) => line.split(',')[7])).toEqual(expected);
  // One status, too.
  const notFound = await csvLines('status=404');
  expect(notFound.length).toBe(
    records.filter((r) => r.status === 404 && Date.parse(r.timestamp) >= periodStart).length,
  );
});

it('writes what a caller sent as inert text in the CSV: no formula, NUL or bidi control reaches it', async () => {
  const response = await get(`/branches/${BRANCH}/usage.csv?route=%24default`);
  expect(response.headers['content-type']).toBe('text/csv; charset=utf-8');
  expect(response.headers['content-disposition']).toBe(`attachment; filename="usage-${BRANCH}-24h.csv"`);
  // eslint-disable-next-line no-control-regex
  expect(response.body).not.toMatch(/[\u0000\u202a-\u202e\u2066-\u2069]/);
  const [, line] = response.body.trimEnd().split('\r\n');
  expect(line!.split(',')[3]).toBe('"/api/=HYPERLINK(""x"")\\x00\\u{202e}evil"');
});

it('shows an empty state that says what to do when no call matches', async () => {
  const page = await get(`/branches/${BRANCH}/usage?status=3xx`);
  expect(page.body.replace(/\s+/g, ' ')).toContain('No call in this period matches the status and route filters.');
});

it('shows each call to the second, and breaks its path only after a `/`', async () => {
  const page = await get(`/branches/${BRANCH}/usage?route=${encodeURIComponent('GET /v1/members')}`);
  const newest = records
    .filter((r) => r.route === 'GET /v1/members')
    .sort((a, b) => b.timestamp.localeCompare(a.timestamp))[0]!;
  expect(page.body).toContain(`${newest.timestamp.slice(0, 19).replace('T', ' ')} UTC</time`);
  expect(page.body).toContain('<code class="path">/<wbr />api/<wbr />v1/<wbr />members</code>');
});
