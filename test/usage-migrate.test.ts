/**
 * `usage migrate` (lib/operator/usage-migrate.ts) against dynalite: a usage table of the shape
 * before write shards (partition key `branch_id`, as git history has it), its records already
 * counted in the rollups by the old stream; the copy goes through the local change feed
 * (lib/local/change-feed.ts), so the aggregator sees the copies as a deployed one would.
 */
import { CreateTableCommand } from '@aws-sdk/client-dynamodb';
import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { ChangeFeed } from '../lib/local/change-feed';
import { startUsageChangeFeed } from '../lib/local/usage-change-feed';
import { streamEvent, usageChange } from '../lib/local/stream-events';
import { createOperatorContext, type OperatorContext } from '../lib/operator/context';
import { migrateUsage, type MigrateOptions } from '../lib/operator/usage-migrate';
import { createTableInput, usageTable, USAGE_BY_KEY_INDEX } from '../shared/data/tables';
import type { UsageRecord } from '../shared/data/repositories/usage';
import { hourOf, totalsOf } from '../shared/domain/rollups';
import { logger, metrics } from '../shared/lambda/observability';
import { createUsageAggregator } from '../shared/lambda/usage-stream';
import { runCli } from './support/cli';
import { mainBranch, otherBranch } from './support/fixtures';
import { createKey, createTables, fixtureClient, seedBranches, tableNames } from './support/harness';

const target = process.env.DYNAMODB_ENDPOINT!;
const oldTable = `${tableNames.usage}-unsharded`;
const HOUR = 3_600_000;
// Settled hours (ended more than the rebuild's settle time ago), within the retention.
const firstHour = Date.parse(hourOf(Date.now() - 30 * HOUR));
const lastHour = Date.parse(hourOf(Date.now() - 3 * HOUR));
const longAgo = Date.parse(hourOf(Date.now() - 95 * 24 * HOUR));
let feed: ChangeFeed;
let ctx: OperatorContext;
let keys: { main: string[]; other: string };
const seeded: {
  main: UsageRecord[];
  other: UsageRecord[];
  expired: UsageRecord[];
  bad: (UsageRecord | Record<string, unknown>)[];
} = {
  main: [],
  other: [],
  expired: [],
  bad: [],
};

const call = { method: 'GET', path: '/api/v1/branch', route: 'GET /v1/branch' } as const;
/** The i-th call of a key, somewhere in the hour starting `at`; one in five a 404. */
const record = (branchId: string, keyId: string, i: number, at: number): UsageRecord => ({
  ...call,
  branch_id: branchId,
  key_id: keyId,
  status: i % 5 === 0 ? 404 : 200,
  response_time_ms: 3 + (i % 7),
  timestamp: new Date(at + ((i * 7919) % HOUR)).toISOString(),
  request_id: `${branchId}-${i}`,
});

/** An item as the unsharded table stored it: the record, its sort key and TTL. */
const oldItem = (r: UsageRecord | Record<string, unknown>) => ({
  ...r,
  sk: `${String(r.timestamp)}#${String(r.request_id)}`,
  expires_at_epoch: Math.floor(Date.parse(String(r.timestamp)) / 1000) + 90 * 86_400,
});

const seedOldTable = async () => {
  const definition = {
    ...usageTable,
    partitionKey: { name: 'branch_id', type: 'S' },
    indexes: [
      {
        indexName: USAGE_BY_KEY_INDEX,
        partitionKey: { name: 'key_id', type: 'S' },
        sortKey: { name: 'sk', type: 'S' },
      },
    ],
  } as const;
  await fixtureClient.send(new CreateTableCommand(createTableInput(definition, oldTable)));
  const hours = (lastHour - firstHour) / HOUR + 1;
  for (let i = 0; i < 120; i += 1) {
    seeded.main.push(record(mainBranch.id, keys.main[i % 2]!, i, firstHour + (i % hours) * HOUR));
  }
  for (let i = 0; i < 40; i += 1) seeded.other.push(record(otherBranch.id, keys.other, i, lastHour - (i % 4) * HOUR));
  for (let i = 0; i < 5; i += 1) seeded.expired.push(record(mainBranch.id, keys.main[0]!, 1000 + i, longAgo));
  seeded.bad.push(
    { ...record(mainBranch.id, keys.main[0]!, 2000, lastHour), status: 'teapot' },
    record(mainBranch.id, 'key_unknown', 2001, lastHour),
    record(otherBranch.id, keys.main[0]!, 2002, lastHour),
  );
  const items = [...seeded.main, ...seeded.other, ...seeded.expired, ...seeded.bad].map(oldItem);
  for (let i = 0; i < items.length; i += 25) {
    const puts = items.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } }));
    await fixtureClient.send(new BatchWriteCommand({ RequestItems: { [oldTable]: puts } }));
  }
  // The old stream counted them when they were written: source = the old partition key, the branch.
  const aggregate = createUsageAggregator({ rollups: ctx.rollups, retentionDays: 400, logger, metrics });
  const counted = [...seeded.main, ...seeded.other, ...seeded.expired];
  for (let i = 0; i < counted.length; i += 100) {
    const changes = counted.slice(i, i + 100).map((r, j) => usageChange(r, i + j + 1, r.branch_id));
    const response = await aggregate(streamEvent(changes, 'arn:aws:dynamodb:local:0:table/unsharded'));
    expect(response.batchItemFailures).toEqual([]);
  }
};

beforeAll(async () => {
  await createTables();
  await seedBranches();
  const [a, b, c] = [await createKey(), await createKey(), await createKey({ branchId: otherBranch.id })];
  keys = { main: [a.record.key_id, b.record.key_id], other: c.record.key_id };
  feed = await startUsageChangeFeed({ target, usageTable: tableNames.usage });
  // Every write from here on goes through the feed, as with npm start: the copies reach the aggregator.
  process.env.DYNAMODB_ENDPOINT = feed.endpoint;
  ctx = createOperatorContext(process.env);
  await seedOldTable();
}, 60_000);
afterAll(async () => {
  await feed.close();
  ctx.close();
  process.env.DYNAMODB_ENDPOINT = target;
});

const migrate = (options: Partial<MigrateOptions> = {}) =>
  migrateUsage(ctx, { fromTable: oldTable, wait: () => feed.drain(), ...options });

const totals = async (branchId: string, from = firstHour, to = lastHour) => {
  await feed.drain();
  return totalsOf(await ctx.rollups.hours({ branchId, fromHour: hourOf(from), toHour: hourOf(to) }));
};

/** Every record of a branch through the usage log reader, page by page, newest first. */
const readLog = async (branchId: string, keyId?: string) => {
  const records: UsageRecord[] = [];
  let position: string | undefined;
  do {
    const page = await ctx.usage.query({
      branchId,
      limit: 25,
      ...(keyId ? { keyId } : {}),
      ...(position ? { position } : {}),
    });
    records.push(...page.records);
    position = page.nextPosition;
  } while (position);
  return records;
};

const newestFirst = (records: readonly UsageRecord[]) =>
  [...records].sort((x, y) => `${y.timestamp}#${y.request_id}`.localeCompare(`${x.timestamp}#${x.request_id}`));

describe('refuses', () => {
  it.each([
    ['a table that does not exist', 'no-such-usage-table', /^No table named no-such-usage-table at this target$/],
    ['the usage table itself', tableNames.usage, /is the usage table itself/],
    ['a table of another key shape', tableNames.keys, /is not an unsharded usage table/],
  ])('%s, by code and field', async (_, fromTable, message) => {
    await expect(migrate({ fromTable })).rejects.toMatchObject({ code: 'invalid_input', field: 'from_table', message });
  });

  it('segments out of range', async () => {
    await expect(migrate({ segments: 0 })).rejects.toMatchObject({ field: 'segments' });
    await expect(migrate({ segments: 65 })).rejects.toMatchObject({ field: 'segments' });
  });
});

describe('migrating the unsharded table', () => {
  it('a dry run counts what it would copy and writes nothing', async () => {
    const result = await migrate({ dryRun: true });
    expect(result).toMatchObject({ scanned: 168, stored: 160, already_stored: 0, past_retention: 5, skipped_count: 3 });
    expect(result.rebuilds).toBeNull();
    expect(await readLog(mainBranch.id)).toEqual([]);
  });

  it('copies each record into its shard: the log reads them all, newest first, per branch and per key', async () => {
    const result = await migrate({ segments: 3 });
    expect(result).toMatchObject({ scanned: 168, stored: 160, already_stored: 0, past_retention: 5, skipped_count: 3 });
    expect(result.skipped.map((s) => s.reason).sort()).toEqual([
      'not a valid usage record (status)',
      'the key belongs to another branch',
      'unknown key',
    ]);
    expect(await readLog(mainBranch.id)).toEqual(newestFirst(seeded.main));
    expect(await readLog(otherBranch.id)).toEqual(newestFirst(seeded.other));
    const ofKey = await readLog(mainBranch.id, keys.main[1]);
    expect(ofKey).toEqual(newestFirst(seeded.main.filter((r) => r.key_id === keys.main[1])));
    expect(result.branches.map((b) => [b.branch_id, b.records])).toEqual([
      [mainBranch.id, 120],
      [otherBranch.id, 40],
    ]);
  });

  it('without the rebuild the aggregator counts the copies a second time (why the rebuild exists)', async () => {
    expect((await totals(mainBranch.id)).calls).toBe(240);
    expect((await totals(otherBranch.id)).calls).toBe(80);
  });

  it('run again with the rebuild: nothing copied twice, and the rollups end exact', async () => {
    const result = await migrate({ rebuild: true });
    expect(result).toMatchObject({ stored: 0, already_stored: 160, past_retention: 5 });
    for (const rebuild of result.rebuilds ?? []) {
      expect(rebuild).toMatchObject({ result: { busy_hours: [], open_hours: [] } });
    }
    expect(result.rebuilds).toHaveLength(2);
    const main = await totals(mainBranch.id);
    expect(main).toMatchObject({ calls: 120, by_status: { 200: 96, 404: 24 } });
    expect((await totals(otherBranch.id)).calls).toBe(40);
    // The hour past the retention was not copied: still counted once, by the old stream.
    expect((await totals(mainBranch.id, longAgo, longAgo)).calls).toBe(5);
    expect(await readLog(mainBranch.id)).toHaveLength(120);
  });

  it('a further run writes nothing and the rollups stay exact', async () => {
    const result = await migrate({ segments: 1 });
    expect(result).toMatchObject({ stored: 0, already_stored: 160 });
    expect((await totals(mainBranch.id)).calls).toBe(120);
    expect((await totals(otherBranch.id)).calls).toBe(40);
  });
});

describe('branch-api usage migrate', () => {
  it('prints a JSON summary', async () => {
    const env = { DYNAMODB_ENDPOINT: feed.endpoint };
    const { json, code } = await runCli(['usage', 'migrate', '--from-table', oldTable, '--dry-run', '--json'], env);
    expect(json).toMatchObject({ from_table: oldTable, dry_run: true, stored: 0, already_stored: 160 });
    // Three records were skipped: reported, and the exit says so.
    expect(code).toBe(1);
  });

  it('an unknown table is one clear line, or a JSON error with its code and field', async () => {
    const env = { DYNAMODB_ENDPOINT: feed.endpoint };
    const text = await runCli(['usage', 'migrate', '--from-table', 'no-such-usage-table'], env);
    expect(text.code).toBe(1);
    expect(text.stderr.trim()).toBe('error: No table named no-such-usage-table at this target');
    const json = await runCli(['usage', 'migrate', '--from-table', 'no-such-usage-table', '--json'], env);
    expect(JSON.parse(json.stderr)).toEqual({
      error: {
        code: 'invalid_input',
        field: 'from_table',
        message: 'No table named no-such-usage-table at this target',
      },
    });
  });
});
