/**
 * What the "API keys" page costs in DynamoDB calls (docs/console.md "Figures"), counted on the
 * console's own client by a step added to its middleware stack: nothing is stubbed, every call
 * reaches the embedded DynamoDB. The page reads the keys, the branch's last-used rollup items and
 * the rollups' "as of" once, plus one Query of the rollups per shown key that has calls; never a
 * raw usage record, so a page costs the same whatever the keys' traffic.
 */
import { KEYS_PAGE_SIZE } from '../../lib/console/keys-page';
import { startConsole, type SettingsConsole } from '../../lib/console/server';
import { createOperatorContext, type OperatorContext } from '../../lib/operator/context';
import { padSequence, type StreamCall } from '../../shared/domain/rollups';
import type { UsageRecord } from '../../shared/domain/usage-record';
import { otherBranch } from '../support/fixtures';
import { countCommands, setUpBranches, tableNames } from '../support/harness';
import { rawRequest, sessionCookie } from './support';

const BRANCH = otherBranch.id;
/** More than a page, so page 1 and page 2 are both full enough to tell apart. */
const KEYS = 160;
/** The keys above and the dormant key of the last test, the oldest. */
const LAST_PAGE = Math.ceil((KEYS + 1) / KEYS_PAGE_SIZE);
const NOW = Date.now();
const DAY = 86_400_000;

let ctx: OperatorContext;
let settings: SettingsConsole;
let counter: ReturnType<typeof countCommands>;
/** Newest first, as the page lists them. */
let keyIds: string[] = [];

/** A call of the branch; each key's calls differ only in key, time and request id. */
const A_CALL = { branch_id: BRANCH, method: 'GET', path: '/api/v1/branch', route: 'GET /v1/branch', status: 200 };
const call = (keyId: string, i: number): Omit<UsageRecord, 'timestamp'> => ({
  ...A_CALL,
  key_id: keyId,
  response_time_ms: 3,
  request_id: `req-${keyId}-${i}`,
});

/** Calls of a key, both as raw usage records and counted in its rollups (as the aggregator would). */
const used = async (keyId: string, calls: number, daysAgo = 0) => {
  const records = Array.from({ length: calls }, (_, i) => ({
    ...call(keyId, i),
    timestamp: new Date(NOW - daysAgo * DAY - 3_600_000 - i * 60_000).toISOString(),
  }));
  await ctx.usage.putBatch(records, 1);
  const stream: StreamCall[] = records.map((record, i) => ({
    record,
    source: 'test|budget',
    sequence: padSequence(String(i + 1))!,
  }));
  expect((await ctx.rollups.apply(stream, 30)).failed).toEqual([]);
};

/** Each call as `<command> <table>[ <index>]`, with how many times it was made. */
const tally = () => {
  const names = new Map(Object.entries(tableNames).map(([name, table]) => [table, name]));
  const counts: Record<string, number> = {};
  for (const { command, input } of counter.sent) {
    // A BatchGetItem names its table in RequestItems.
    const table = input.TableName ?? Object.keys(input.RequestItems ?? {})[0];
    const what = [command, names.get(table) ?? table, input.IndexName].filter(Boolean).join(' ');
    counts[what] = (counts[what] ?? 0) + 1;
  }
  return counts;
};

const keysPage = async (query = '') => {
  const response = await rawRequest(settings.origin, `/branches/${BRANCH}/keys${query}`, {
    headers: { cookie: await sessionCookie(settings) },
  });
  expect(response.status).toBe(200);
  return response.body;
};

beforeAll(async () => {
  await setUpBranches();
  ctx = createOperatorContext(process.env);
  // Created 20 at a time: the count matters here, not the pace.
  for (let i = 0; i < KEYS - 1; i += 20) {
    await Promise.all(
      Array.from({ length: Math.min(20, KEYS - 1 - i) }, (_, j) =>
        ctx.keys.create({ branchId: BRANCH, scopes: ['read'], name: `budget ${i + j}` }),
      ),
    );
  }
  keyIds = (await ctx.keys.listByBranch(BRANCH)).map((key) => key.key_id);
  settings = await startConsole({ port: 0, ctx, log: () => undefined });
  counter = countCommands(ctx.client);
}, 60_000);

afterAll(async () => {
  await settings?.close();
  ctx?.close();
});

beforeEach(() => counter.reset());

it(`a page of ${KEYS} keys none of which has calls: 4 calls, none to the usage table`, async () => {
  expect(keyIds).toHaveLength(KEYS);
  const body = await keysPage();
  expect(body).toContain(`Keys 1–${KEYS_PAGE_SIZE} of ${KEYS}`);
  expect(tally()).toEqual({
    'GetItemCommand branchData': 1, // the branch exists
    'QueryCommand keys by-branch': 1, // every key of the branch: filters and the total need them
    'QueryCommand rollups': 1, // the last-used items of every key of the branch
    'GetItemCommand rollups': 1, // the rollups' "as of"
  });
});

it('a key with calls adds a Query of the rollups key index and a read of its items, however many calls it made; raw records are never read', async () => {
  const shown = keyIds.slice(0, KEYS_PAGE_SIZE);
  // 5 keys of page 1 (one with 300 calls) and 3 of the last page.
  await used(shown[0]!, 300);
  for (const keyId of [...shown.slice(1, 5), ...keyIds.slice(-3)]) await used(keyId, 2);
  counter.reset();

  await keysPage();
  expect(tally()).toEqual({
    'GetItemCommand branchData': 1,
    'QueryCommand keys by-branch': 1,
    'QueryCommand rollups': 1,
    'GetItemCommand rollups': 1,
    'QueryCommand rollups by-key': 5,
    'BatchGetItemCommand rollups': 5, // the index holds keys only (docs/decisions.md "Cost")
  });

  counter.reset();
  await keysPage(`?page=${LAST_PAGE}`);
  expect(tally()['QueryCommand rollups by-key']).toBe(3);
  expect(Object.keys(tally()).filter((what) => what.includes('usage'))).toEqual([]);
});

it('shows last use and the findings from the rollups, with their "as of"', async () => {
  const { record } = await ctx.keys.create({ branchId: BRANCH, scopes: ['read', 'team:read'], name: 'wide' });
  await used(record.key_id, 3);
  const body = await keysPage();
  const row = body.split('<tr>').find((tr) => tr.includes(record.key_id))!;
  expect(row).toContain('<code>unused_scopes</code>: none of its calls of the last 90 days needed team:read');
  expect(row).not.toContain('never_used');
  expect(body).toMatch(/Last used and audit findings count calls as of/);
});

it('a key last used before the 90 days the findings look at: no Query of its hour items, and `unused`, not `unused_scopes`', async () => {
  const { record } = await ctx.keys.create({
    branchId: BRANCH,
    scopes: ['read', 'team:read'],
    name: 'dormant',
    now: new Date(NOW - 120 * DAY),
  });
  await used(record.key_id, 2, 100);
  counter.reset();
  const body = await keysPage(`?page=${LAST_PAGE}`); // the oldest key: the last page, with 3 keys that have recent calls
  expect(tally()['QueryCommand rollups by-key']).toBe(3);
  const row = body.split('<tr>').find((tr) => tr.includes(record.key_id))!;
  expect(row).toContain('<code>unused</code>: no call in the last 90 days');
  expect(row).not.toContain('unused_scopes');
  expect(row).not.toContain('never_used');
});
