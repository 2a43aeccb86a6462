/**
 * `npm start`'s composition (lib/local/environment.ts): the usage change feed runs inside the
 * embedded DynamoDB, so the endpoint the tools use is the store's own (no proxy in front), and
 * every call through the gateway reaches the rollups.
 */
import { startLocalEnvironment, type LocalEnvironment } from '../../lib/local/environment';
import { createOperatorContext } from '../../lib/operator/context';
import { hourOf, totalsOf } from '../../shared/domain/rollups';

const saved = { ...process.env };
let environment: LocalEnvironment;
beforeAll(async () => {
  // As `npm start` has it: the environment creates its own tables in its own store.
  for (const name of ['DYNAMODB_ENDPOINT', 'KEYS_TABLE', 'USAGE_TABLE', 'BRANCH_DATA_TABLE', 'RATE_LIMITS_TABLE']) {
    delete process.env[name];
  }
  environment = await startLocalEnvironment({ port: 0, dynamoPort: 0 });
});
afterAll(async () => {
  await environment.close();
  process.env = saved;
});

it('counts every call through the gateway in the rollups, fed from inside the store', async () => {
  expect(environment.usageFeed.endpoint).toBe(environment.dynamoEndpoint);
  const calls = 12;
  for (let i = 0; i < calls; i += 1) {
    const response = await fetch(`${environment.gateway.baseUrl}/v1/branch`, {
      headers: { authorization: `Bearer ${environment.demoKey}` },
    });
    expect(response.status).toBe(200);
  }
  await environment.usageFeed.drain();
  expect(environment.usageFeed.stats()).toMatchObject({ delivered: calls, setAside: 0 });
  const ctx = createOperatorContext(process.env);
  try {
    const now = Date.now();
    const hours = await ctx.rollups.hours({
      branchId: environment.demoBranchId,
      fromHour: hourOf(now - 3_600_000),
      toHour: hourOf(now),
    });
    expect(totalsOf(hours).calls).toBe(calls);
  } finally {
    ctx.close();
  }
  // What the store holds grew by each call's usage item and its index entry.
  const stored = await environment.storedData();
  expect(stored!.byPart[`item-${process.env.USAGE_TABLE}`]?.entries).toBe(calls);
});

it('serves the API without a socket to the embedded DynamoDB: the handlers and the tools of this process call it in-process', async () => {
  const before = environment.storeHttpRequests();
  for (let i = 0; i < 3; i += 1) {
    const response = await fetch(`${environment.gateway.baseUrl}/v1/members`, {
      headers: { authorization: `Bearer ${environment.demoKey}` },
    });
    expect(response.status).toBe(200);
  }
  await environment.usageFeed.drain();
  // Three calls made 12 DynamoDB calls and fed 3 records to the aggregator; none crossed HTTP.
  expect(environment.storeHttpRequests()).toBe(before);
  // Another process's tools still reach it over HTTP, at the advertised endpoint.
  const ctx = createOperatorContext(process.env);
  try {
    await ctx.keys.listByBranch(environment.demoBranchId);
  } finally {
    ctx.close();
  }
  expect(environment.storeHttpRequests()).toBeGreaterThan(before!);
});
