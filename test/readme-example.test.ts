import { handler } from '../functions/get-branch';
import { createKey, createTables, invoke, seedBranches } from './support/harness';

beforeAll(async () => {
  await createTables(); // this file's tables, from shared/data/tables.ts
  await seedBranches(); // test/support/fixtures.ts
});

it('returns the branch', async () => {
  const { key } = await createKey({ scopes: ['read'] });
  const res = await invoke(handler, { path: '/v1/branch', key }); // an API Gateway v2 event
  expect(res.statusCode).toBe(200);
});
