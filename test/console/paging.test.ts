/**
 * Pages hold what they say: for random data and random filters, every page of the usage log and
 * of the activity log holds exactly its page size until the last, the last has no older link,
 * no link leads to an empty page, and the pages in order are the raw rows in order. Read through
 * the console's own data functions on the embedded DynamoDB.
 */
import fc from 'fast-check';
import { createOperatorContext, type OperatorContext } from '../../lib/operator/context';
import { ACTIVITY_PAGE_SIZE } from '../../lib/console/activity-routes';
import { LOG_PAGE_SIZE, loadUsageLog, ROUTE_CHOICES, type UsageFilters } from '../../lib/console/usage-data';
import { usagePage } from '../../lib/console/usage-page';
import type { ActivityEntry } from '../../shared/domain/key-activity';
import type { UsageRecord } from '../../shared/domain/usage-record';
import { createTables } from '../support/harness';

let ctx: OperatorContext;
beforeAll(async () => {
  await createTables();
  ctx = createOperatorContext(process.env);
});
afterAll(() => ctx.close());

const KEYS = ['key_paging_a', 'key_paging_b'];
const STATUSES = [200, 204, 401, 404, 429, 500];
const ROUTES = ROUTE_CHOICES.slice(0, 3);
const now = new Date();
let run = 0;

const callArbitrary = fc.record({
  key: fc.nat(KEYS.length - 1),
  status: fc.constantFrom(...STATUSES),
  route: fc.constantFrom(...ROUTES),
  // Within the last 24 hours, some calls in the same millisecond (the request id orders them).
  ageMs: fc.oneof(fc.integer({ min: 60_000, max: 20 * 3_600_000 }), fc.constant(120_000)),
});

const filtersArbitrary = fc.record({
  key: fc.constantFrom(undefined, 0, 1),
  status: fc.constantFrom(undefined, '2xx', '4xx', '5xx', '404', '429'),
  route: fc.constantFrom(undefined, ...ROUTES),
});

const sortKey = (r: UsageRecord) => `${r.timestamp}#${r.request_id}`;

/** The usage page of a branch's last 24 hours with only its log part given. */
const logPage = (
  branchId: string,
  log: Pick<Parameters<typeof usagePage>[0], 'log' | 'scanned'> & Partial<Parameters<typeof usagePage>[0]>,
) => usagePage({ branchId, keys: [], period: '24h', bucket: 'hour', chart: { ...EMPTY_CHART }, ...log });

it('shows exactly 50 calls a page under any filters, and never links to an empty page', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(callArbitrary, { maxLength: 230, size: 'max' }),
      filtersArbitrary,
      async (calls, { key, status, route }) => {
        run += 1;
        const branchId = `br_paging_${run}`;
        const records: UsageRecord[] = calls.map((call, i) => ({
          key_id: KEYS[call.key]!,
          branch_id: branchId,
          method: 'GET',
          path: `/api/v1/p/${i}`,
          route: call.route,
          status: call.status,
          response_time_ms: 5,
          timestamp: new Date(now.getTime() - call.ageMs).toISOString(),
          request_id: `req-${String(i).padStart(4, '0')}`,
        }));
        if (records.length) await ctx.usage.putBatch(records, 1);
        const filters: UsageFilters = {
          branchId,
          period: '24h',
          bucket: 'hour',
          now,
          ...(key !== undefined ? { keyId: KEYS[key]! } : {}),
          ...(status ? { status } : {}),
          ...(route ? { route } : {}),
        };
        // The raw count and order, without the console's code.
        const expected = records
          .filter(
            (r) =>
              (filters.keyId === undefined || r.key_id === filters.keyId) &&
              (route === undefined || r.route === route) &&
              (status === undefined ||
                (status.endsWith('xx') ? `${String(r.status)[0]}xx` === status : String(r.status) === status)),
          )
          .sort((a, b) => (sortKey(a) < sortKey(b) ? 1 : -1))
          .map((r) => r.request_id);

        const pages: { position: string | undefined; ids: string[] }[] = [];
        let position: string | undefined;
        do {
          const page = await loadUsageLog(ctx, filters, position);
          expect(page.searchStopped).toBe(false);
          pages.push({ position, ids: page.records.map((r) => r.request_id) });
          position = page.nextPosition;
          // A page with an older link is full; the older page it opens has calls.
          if (position) expect(page.records).toHaveLength(LOG_PAGE_SIZE);
          else expect(page.records.length).toBeLessThanOrEqual(LOG_PAGE_SIZE);
          const html = logPage(branchId, {
            log: page.records,
            scanned: page.scanned,
            ...(position ? { nextCursor: position } : {}),
          });
          expect(html.includes('>Older calls</a')).toBe(position !== undefined);
          expect((html.match(/<tr data-request-id=/g) ?? []).length).toBe(page.records.length);
        } while (position);
        expect(pages.flatMap((p) => p.ids)).toEqual(expected);
        expect(pages.length).toBe(Math.max(1, Math.ceil(expected.length / LOG_PAGE_SIZE)));
        // A newer link goes back to the position a page was opened at: the same calls again.
        for (const page of pages.slice(0, -1)) {
          const again = await loadUsageLog(ctx, filters, page.position);
          expect(again.records.map((r) => r.request_id)).toEqual(page.ids);
        }
      },
    ),
    { numRuns: 20, seed: 4343 },
  );
}, 180_000);

it('says when a filtered page stopped searching at its bound, and its older link searches on', async () => {
  const branchId = 'br_paging_bound';
  const records: UsageRecord[] = Array.from({ length: 30 }, (_, i) => ({
    key_id: KEYS[0]!,
    branch_id: branchId,
    method: 'GET',
    path: '/api/v1/branch',
    route: ROUTES[0]!,
    // The only 404 is the oldest call.
    status: i === 29 ? 404 : 200,
    response_time_ms: 5,
    timestamp: new Date(now.getTime() - 60_000 - i * 1000).toISOString(),
    request_id: `req-bound-${i}`,
  }));
  await ctx.usage.putBatch(records, 1);
  const filters: UsageFilters = { branchId, period: '24h', bucket: 'hour', now, status: '4xx' };
  const first = await loadUsageLog(ctx, filters, undefined, { scanLimit: 20 });
  expect([first.records.length, first.searchStopped, first.scanned]).toEqual([0, true, 20]);
  const html = logPage(branchId, {
    log: [],
    scanned: first.scanned,
    searchStopped: true,
    status: '4xx',
    nextCursor: first.nextPosition!,
  }).replace(/\s+/g, ' ');
  expect(html).toContain('No call(s) among the 20 newest searched match the filters');
  const second = await loadUsageLog(ctx, filters, first.nextPosition, { scanLimit: 20 });
  expect([second.records.map((r) => r.request_id), second.searchStopped]).toEqual([['req-bound-29'], false]);
});

it('shows exactly 50 actions a page, for all keys or one, newer and older', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.record({ key: fc.nat(1), ageMs: fc.integer({ min: 1, max: 5_000_000 }) }), {
        maxLength: 160,
        size: 'max',
      }),
      fc.constantFrom(undefined, 0, 1),
      async (actions, key) => {
        run += 1;
        const branchId = `br_paging_${run}`;
        const entries: ActivityEntry[] = actions.map((action, i) => ({
          activity_id: `${KEYS[action.key]}#${i}`,
          branch_id: branchId,
          key_id: KEYS[action.key]!,
          key_name: 'paging',
          action: 'updated',
          actor: 'tester',
          at: new Date(now.getTime() - action.ageMs).toISOString(),
          changes: {},
        }));
        for (const entry of entries) await ctx.activity.put(entry);
        const keyId = key === undefined ? undefined : KEYS[key]!;
        const expected = entries
          .filter((e) => keyId === undefined || e.key_id === keyId)
          .sort((a, b) => (`${a.at}#${a.activity_id}` < `${b.at}#${b.activity_id}` ? 1 : -1))
          .map((e) => e.activity_id);
        const query = { branchId, limit: ACTIVITY_PAGE_SIZE, ...(keyId ? { keyId } : {}) };
        const pages: string[][] = [];
        let older: string | undefined;
        let newer: string | undefined;
        do {
          const page = await ctx.activity.page({ ...query, ...(older ? { before: older } : {}) });
          pages.push(page.entries.map((e) => e.activity_id));
          if (page.older) expect(page.entries).toHaveLength(ACTIVITY_PAGE_SIZE);
          expect(page.newer === undefined).toBe(pages.length === 1);
          older = page.older;
          newer = page.newer;
        } while (older);
        expect(pages.flat()).toEqual(expected);
        // Back through the newer links: the same pages, each full.
        for (let i = pages.length - 2; i >= 0; i -= 1) {
          const page = await ctx.activity.page({ ...query, after: newer! });
          expect(page.entries.map((e) => e.activity_id)).toEqual(pages[i]);
          newer = page.newer;
        }
        expect(newer).toBeUndefined();
      },
    ),
    { numRuns: 15, seed: 4344 },
  );
}, 180_000);

const EMPTY_CHART = {
  bucket: 'hour' as const,
  since: now.toISOString(),
  starts: [],
  counts: { '2xx': [], '3xx': [], '4xx': [], '5xx': [] },
  total: 0,
  p50_ms: null,
  p95_ms: null,
  as_of: null,
  set_aside: null,
  counted_from: 'rollups' as const,
  truncated: false,
};
