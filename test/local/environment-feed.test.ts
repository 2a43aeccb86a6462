/**
 * `npm start`'s composition (lib/local/environment.ts): the endpoint the tools use is the usage
 * change feed in front of the embedded DynamoDB, every call through the gateway reaches the
 * rollups, and the store's temporary folder is gone once the environment closes.
 */
import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
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
  const eventsFolder = dirname(environment.keyEvents.keyEventsFile);
  await environment.close();
  process.env = saved;
  // The temporary folder it made (store, key events) went with it.
  expect(existsSync(eventsFolder)).toBe(false);
});

it('counts every call through the gateway in the rollups, fed through the endpoint the tools use', async () => {
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
});
