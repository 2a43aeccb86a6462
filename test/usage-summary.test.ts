/**
 * The summary of `usage` (readUsage) counts every call of the period, not the page shown, up to
 * its stated bound (MAX_SUMMARY_CALLS), and says so past it.
 */
import { createOperatorContext } from '../lib/operator/context';
import { MAX_SUMMARY_CALLS, readUsage } from '../lib/operator/usage';
import { mainBranch } from './support/fixtures';
import { fixtureUsage, setUpBranches } from './support/harness';

const ctx = createOperatorContext(process.env);
let keyId: string;

beforeAll(async () => {
  ({ keyId } = await setUpBranches());
  await fixtureUsage.putBatch(
    Array.from({ length: 30 }, (_, i) => ({
      key_id: keyId,
      branch_id: mainBranch.id,
      method: 'GET',
      path: '/api/v1/branch',
      route: 'GET /v1/branch',
      status: i < 20 ? 200 : 404,
      response_time_ms: i + 1,
      timestamp: new Date(Date.UTC(2026, 5, 1, 0, 0, i)).toISOString(),
      request_id: `req-${i}`,
    })),
    90,
  );
});
afterAll(() => ctx.close());

it('counts every call in the period while showing a page', async () => {
  const { records, summary } = await readUsage(ctx, { branchId: mainBranch.id, limit: 5 });
  expect(records).toHaveLength(5);
  // Percentiles as every view states them: the bound of the rollups' bucket holding each (15 ≤ 15, 29 ≤ 30).
  expect(summary).toEqual({ count: 30, by_status: { 200: 20, 404: 10 }, p50_ms: 15, p95_ms: 30, complete: true });
  const since = await readUsage(ctx, { branchId: mainBranch.id, limit: 1, since: '2026-06-01T00:00:25Z' });
  expect(since.summary).toMatchObject({ count: 5, by_status: { 404: 5 } });
  const byKey = await readUsage(ctx, { branchId: mainBranch.id, keyId, limit: 1 });
  expect(byKey.summary.count).toBe(30);
});

it('past its bound reads no more and says the figures cover the newest calls', async () => {
  expect(MAX_SUMMARY_CALLS).toBe(200_000);
  const { summary } = await readUsage(ctx, { branchId: mainBranch.id, limit: 1 }, 12);
  expect(summary).toMatchObject({ count: 12, by_status: { 404: 10, 200: 2 }, complete: false });
});
