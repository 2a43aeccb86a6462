/**
 * `usage rebuild` over a long quiet period costs what its calls cost, not a step per empty hour:
 * 90 days (2,160 hours) of a branch with calls in three hours, counted in DynamoDB requests
 * through a proxy that only logs them (no fault injected), and the result is exact.
 */
import { createOperatorContext, type OperatorContext } from '../../lib/operator/context';
import { rebuildRollups } from '../../lib/operator/usage-rebuild';
import { summarizeUsage } from '../../lib/operator/usage-rollups';
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy';
import { otherBranch } from '../support/fixtures';
import { createKey, fixtureUsage, setUpBranches } from '../support/harness';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
let proxy: FaultProxy;
let ctx: OperatorContext;

beforeAll(async () => {
  await setUpBranches();
  proxy = await startFaultProxy(process.env.DYNAMODB_ENDPOINT!);
  ctx = createOperatorContext({ ...process.env, DYNAMODB_ENDPOINT: proxy.endpoint });
});
afterAll(async () => {
  ctx.close();
  await proxy.close();
});

it('rebuilds 90 days of a quiet branch in about a hundred requests, exactly', async () => {
  const keyId = (await createKey({ branchId: otherBranch.id })).record.key_id;
  const now = new Date();
  const since = new Date(now.getTime() - 89 * DAY);
  // Calls in three hours of the 90 days: 2 on day 80 ago, 1 on day 30 ago, 3 yesterday.
  const calls = [80 * DAY, 80 * DAY + 60_000, 30 * DAY, DAY, DAY + 1000, DAY + 2000];
  for (const [i, ago] of calls.entries()) {
    await fixtureUsage.put(
      {
        key_id: keyId,
        branch_id: otherBranch.id,
        method: 'GET',
        path: '/api/v1/branch',
        route: 'GET /v1/branch',
        status: 200,
        response_time_ms: 5,
        timestamp: new Date(now.getTime() - ago).toISOString(),
        request_id: `quiet-${i}`,
      },
      90,
    );
  }
  proxy.resetLog();
  const steps: number[] = [];
  const result = await rebuildRollups(ctx, {
    branchId: otherBranch.id,
    since: since.toISOString(),
    now,
    settleSeconds: 0,
    maxLagSeconds: 0,
    onProgress: ({ hours }) => steps.push(hours),
  });
  const requests = proxy.operations().length;
  expect(result).toMatchObject({ records: 6, calls_after: 6, items: 3, busy_hours: [] });
  // One step per hour with calls. A usage read is a Query per write shard (16): the branch check,
  // the period's rollup items, four usage reads to find the three hours, per hour its items, its
  // recount, a write and the write that clears its unverified mark, then the set-aside calls.
  // Stepping through all 2,160 hours took a rollups Query and a usage read each: 36,720 requests.
  expect(steps).toEqual([1, 2, 3]);
  expect(requests).toBeLessThanOrEqual(1 + 1 + 4 * 16 + 3 * (1 + 16 + 1 + 1) + 1);
  const summary = await summarizeUsage(ctx, { branchId: otherBranch.id, since: since.toISOString(), now });
  expect(summary.totals.calls).toBe(6);
});
