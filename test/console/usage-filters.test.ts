/**
 * Totals follow every filter: for random combinations of key, status, route, period and bucket,
 * the chart's total and bars, the page's summary and chart table, the log (every page) and the
 * CSV's records each equal a count of the raw usage records written, through the console's own
 * data functions on the embedded DynamoDB.
 */
import fc from 'fast-check';
import type { UsageRecord } from '../../shared/domain/usage-record';
import { padSequence, type StreamCall } from '../../shared/domain/rollups';
import {
  allUsageRecords,
  loadUsageChart,
  loadUsageLog,
  periodStart,
  PERIODS,
  ROUTE_CHOICES,
  type Bucket,
  type Period,
  type UsageFilters,
} from '../../lib/console/usage-data';
import { usagePage } from '../../lib/console/usage-page';
import { useEnvironment } from './support';

const setup = useEnvironment();
const BRANCH = 'br_second';
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const STATUSES = [200, 201, 304, 400, 401, 404, 429, 500, 503];
const now = new Date();
const keys: { key_id: string; name: string; start: string }[] = [];
let records: UsageRecord[] = [];

beforeAll(async () => {
  const rng = fc.sample(fc.tuple(fc.nat(3), fc.nat(STATUSES.length - 1), fc.nat(ROUTE_CHOICES.length - 1)), {
    numRuns: 300,
    seed: 36,
  });
  for (const name of ['filters one', 'filters two', 'filters three']) {
    const { record } = await setup.ctx.keys.create({ branchId: BRANCH, scopes: ['read'], name });
    keys.push({ key_id: record.key_id, name: record.name, start: record.start });
  }
  records = rng.map(([key, status, route], i) => ({
    key_id: keys[key % keys.length]!.key_id,
    branch_id: BRANCH,
    method: 'GET',
    path: `/api/v1/path-${i}`,
    route: ROUTE_CHOICES[route]!,
    status: STATUSES[status]!,
    response_time_ms: 1 + ((i * 37) % 900),
    // Spread over 30 days and a little more, newest a minute ago.
    timestamp: new Date(now.getTime() - 60_000 - ((i * 2_654_435_761) % (31 * DAY))).toISOString(),
    request_id: `req-filters-${String(i).padStart(3, '0')}`,
  }));
  await setup.ctx.usage.putBatch(records, 1);
  // Counted in the rollups as the aggregator counts a stream of them.
  const stream: StreamCall[] = records.map((record, i) => ({
    record,
    source: 'test|filters',
    sequence: padSequence(String(i + 1))!,
  }));
  expect((await setup.ctx.rollups.apply(stream, 30)).failed).toEqual([]);
}, 60_000);

/** The raw records a view selects, counted here without the console's code. */
const selected = (filters: UsageFilters) =>
  records.filter(
    (r) =>
      Date.parse(r.timestamp) >= periodStart(filters).getTime() &&
      (filters.keyId === undefined || r.key_id === filters.keyId) &&
      (filters.route === undefined || r.route === filters.route) &&
      (filters.status === undefined ||
        (filters.status.endsWith('xx')
          ? `${Math.floor(r.status / 100)}xx` === filters.status
          : String(r.status) === filters.status)),
  );

const bucketOf = (timestamp: string, bucket: Bucket) =>
  bucket === 'hour' ? `${timestamp.slice(0, 13)}:00:00.000Z` : `${timestamp.slice(0, 10)}T00:00:00.000Z`;

const filtersArbitrary = fc.record({
  key: fc.constantFrom(undefined, 0, 1, 2),
  status: fc.constantFrom(undefined, '2xx', '3xx', '4xx', '5xx', '404', '200'),
  route: fc.constantFrom(undefined, ...ROUTE_CHOICES),
  period: fc.constantFrom(...(Object.keys(PERIODS) as Period[])),
  bucket: fc.constantFrom<Bucket>('hour', 'day'),
});

it('counts, for any filters, the same calls in the summary, chart, chart table, log and CSV as the raw records', async () => {
  await fc.assert(
    fc.asyncProperty(filtersArbitrary, async ({ key, status, route, period, bucket }) => {
      const filters: UsageFilters = {
        branchId: BRANCH,
        period,
        bucket,
        now,
        ...(key !== undefined ? { keyId: keys[key]!.key_id } : {}),
        ...(status ? { status } : {}),
        ...(route ? { route } : {}),
      };
      const expected = selected(filters);
      const ids = expected.map((r) => r.request_id).sort();

      const chart = await loadUsageChart(setup.ctx, filters);
      expect(chart.total).toBe(expected.length);
      const bars = new Map<string, number>();
      chart.starts.forEach((start, i) => {
        for (const [cls, counts] of Object.entries(chart.counts)) if (counts[i]) bars.set(`${start} ${cls}`, counts[i]);
      });
      const truth = new Map<string, number>();
      for (const r of expected) {
        const name = `${bucketOf(r.timestamp, bucket)} ${Math.floor(r.status / 100)}xx`;
        truth.set(name, (truth.get(name) ?? 0) + 1);
      }
      expect(Object.fromEntries(bars)).toEqual(Object.fromEntries(truth));

      const logged: string[] = [];
      let position: string | undefined;
      do {
        const page = await loadUsageLog(setup.ctx, filters, position);
        logged.push(...page.records.map((r) => r.request_id));
        position = page.nextPosition;
      } while (position);
      expect(logged.sort()).toEqual(ids);

      const exported: string[] = [];
      for await (const page of allUsageRecords(setup.ctx, filters)) exported.push(...page.map((r) => r.request_id));
      expect(exported.sort()).toEqual(ids);

      const html = usagePage({
        branchId: BRANCH,
        keys,
        period,
        bucket,
        chart,
        log: [],
        scanned: 0,
        ...(filters.keyId ? { keyId: filters.keyId } : {}),
        ...(status ? { status } : {}),
        ...(route ? { route } : {}),
      });
      expect(Number(/<p id="usage-summary">\s*<strong>(\d+)<\/strong>/.exec(html)![1])).toBe(expected.length);
      const table = /<table id="usage-chart-table".*?<\/table>/s.exec(html)![0];
      const cells = [...table.matchAll(/<td>(\d+)<\/td>/g)].reduce((sum, m) => sum + Number(m[1]), 0);
      expect(cells).toBe(expected.length);
      // The small print names every filter the figures follow.
      const scope = /From .*? to now: (.*?); latencies/s.exec(html)![1]!.replace(/\s+/g, ' ');
      expect(scope).toContain(key === undefined ? 'all keys' : `key “${keys[key]!.name}”`);
      expect(scope).toContain(status ? `status ${status}` : 'any status');
    }),
    { numRuns: 40, seed: 3636 },
  );
}, 120_000);

it('says beside the figures when a filtered count stopped at its bound', async () => {
  const filters: UsageFilters = { branchId: BRANCH, period: '30d', bucket: 'day', now, status: '2xx' };
  const chart = await loadUsageChart(setup.ctx, filters, { rawCountLimit: 10 });
  expect(chart.truncated).toBe(true);
  expect(chart.total).toBeLessThanOrEqual(10);
  const html = usagePage({
    branchId: BRANCH,
    keys,
    period: '30d',
    bucket: 'day',
    chart,
    log: [],
    scanned: 0,
    status: '2xx',
  });
  expect(html.replace(/\s+/g, ' ')).toMatch(/Only the newest \d[\d,]* calls of the period are counted/);
  const full = await loadUsageChart(setup.ctx, filters);
  expect([full.truncated, full.total]).toEqual([false, selected(filters).length]);
});
