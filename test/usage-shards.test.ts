/**
 * The usage table's write shards (docs/capacity.md "Per branch"): records spread over
 * USAGE_WRITE_SHARDS partition keys, and every reader merges them newest first, with positions
 * that continue exactly where a page ended and can't reach outside the branch (and key) asked for.
 * The merge itself is checked as a property over random shard contents and page sizes; the
 * repository against the embedded DynamoDB through the real SDK.
 */
import fc from 'fast-check';
import { USAGE_WRITE_SHARDS } from '../shared/data/tables';
import { InvalidUsagePositionError } from '../shared/data/repositories/usage';
import type { UsageRecord } from '../shared/domain/usage-record';
import { mergeNewestFirst, usageShardOf, type ShardReader } from '../shared/data/repositories/usage-shards';
import { createTables, fixtureUsage, scanRaw, tableNames } from './support/harness';

type Item = Record<string, unknown>;

/** Shards held in memory, read `pageSize` items at a time, newest first: the merge's input, no database. */
const shardsOf = (shards: string[][], pageSize: number) => {
  const sorted = shards.map((keys) => [...keys].sort().reverse());
  let reads = 0;
  const read: ShardReader = async (shard, startKey) => {
    reads += 1;
    const keys = sorted[shard] ?? [];
    const from = startKey ? keys.indexOf(String(startKey.sk)) + 1 : 0;
    const items = keys.slice(from, from + pageSize).map((sk) => ({ sk }));
    const more = from + pageSize < keys.length;
    return { items, ...(more ? { lastKey: items.at(-1)! } : {}) };
  };
  return { read, reads: () => reads };
};

describe('the newest-first merge of shards', () => {
  it('gives every item once, newest first, in pages of at most the limit, whatever the shard layout', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.tuple(fc.string({ minLength: 1, maxLength: 6 }), fc.nat(4)), {
          selector: ([sk]) => sk,
          maxLength: 60,
        }),
        fc.integer({ min: 1, max: 7 }),
        fc.integer({ min: 1, max: 9 }),
        async (placed, pageSize, limit) => {
          const shards: string[][] = [[], [], [], [], []];
          for (const [sk, shard] of placed) shards[shard]!.push(sk);
          const all = placed
            .map(([sk]) => sk)
            .sort()
            .reverse();
          const seen: string[] = [];
          let before: string | undefined;
          for (let page = 0; page <= all.length; page += 1) {
            // What the repository does with a position: read only what is older than it.
            const { read } = shardsOf(
              shards.map((keys) => keys.filter((sk) => before === undefined || sk < before)),
              pageSize,
            );
            const { items, more } = await mergeNewestFirst(read, limit, shards.length);
            expect(items.length).toBeLessThanOrEqual(limit);
            seen.push(...items.map((item: Item) => String(item.sk)));
            if (!more) break;
            before = seen.at(-1);
          }
          expect(seen).toEqual(all);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('reads on only the shards that hold the merge back', async () => {
    // Shard 0 has the 50 newest items; the others one old item each.
    const shards = [Array.from({ length: 50 }, (_, i) => `b${String(i).padStart(2, '0')}`), ['a1'], ['a2'], ['a3']];
    const { read, reads } = shardsOf(shards, 10);
    const { items, more } = await mergeNewestFirst(read, 5, shards.length);
    expect(items.map((item) => item.sk)).toEqual(['b49', 'b48', 'b47', 'b46', 'b45']);
    expect(more).toBe(true);
    expect(reads()).toBe(4);
  });
});

const BRANCH = 'br_shards';
const OTHER = 'br_shards_other';
const at = (i: number) => new Date(Date.UTC(2026, 10, 2, 0, 0, 0, 0) + i * 1000).toISOString();
const record = (i: number, branch = BRANCH, key = i % 3 === 0 ? 'key_three' : 'key_other'): UsageRecord => ({
  key_id: key,
  branch_id: branch,
  method: 'GET',
  path: '/api/v1/branch',
  route: 'GET /v1/branch',
  status: 200,
  response_time_ms: 1,
  timestamp: at(i),
  request_id: `req-${branch}-${i}`,
});

/** Every page of a query, with the records' request ids. */
const allPages = async (query: Omit<Parameters<typeof fixtureUsage.query>[0], 'position'>) => {
  const pages: string[][] = [];
  let position: string | undefined;
  do {
    const page = await fixtureUsage.query({ ...query, ...(position ? { position } : {}) });
    pages.push(page.records.map((r) => r.request_id));
    position = page.nextPosition;
  } while (position && pages.length < 100);
  return pages;
};
const ids = (numbers: number[], branch = BRANCH) => numbers.map((i) => `req-${branch}-${i}`);
const newestFirst = (count: number, keep: (i: number) => boolean = () => true) =>
  Array.from({ length: count }, (_, i) => count - 1 - i).filter(keep);

describe('the usage repository over the write shards', () => {
  const COUNT = 120;

  beforeAll(async () => {
    await createTables();
    await fixtureUsage.putBatch(
      Array.from({ length: COUNT }, (_, i) => record(i)),
      90,
    );
    // A neighbouring branch shares a key id: a key's read stays within the branch asked for.
    await fixtureUsage.putBatch(
      Array.from({ length: 30 }, (_, i) => record(i, OTHER, 'key_three')),
      90,
    );
  });

  it('spreads one branch over every shard', async () => {
    const partitions = new Set(
      (await scanRaw(tableNames.usage)).filter((item) => item.branch_id?.S === BRANCH).map((item) => item.pk?.S),
    );
    expect(partitions.size).toBe(USAGE_WRITE_SHARDS);
    expect(usageShardOf('req-1')).toBe(usageShardOf('req-1'));
  });

  it('pages a branch newest first across shards, each record once', async () => {
    const pages = await allPages({ branchId: BRANCH, limit: 7 });
    expect(pages.slice(0, -1).every((page) => page.length === 7)).toBe(true);
    expect(pages.flat()).toEqual(ids(newestFirst(COUNT)));
  });

  it("pages one key's records within the branch only, its branch's filtered", async () => {
    const pages = await allPages({ branchId: BRANCH, keyId: 'key_three', limit: 6 });
    expect(pages.flat()).toEqual(ids(newestFirst(COUNT, (i) => i % 3 === 0)));
  });

  it('keeps `since` across pages', async () => {
    const pages = await allPages({ branchId: BRANCH, since: new Date(at(100)), limit: 8 });
    expect(pages.flat()).toEqual(ids(newestFirst(COUNT, (i) => i >= 100)));
  });

  it("a position from another branch's log shows only the branch asked for", async () => {
    const other = await fixtureUsage.query({ branchId: OTHER, limit: 2 });
    const page = await fixtureUsage.query({ branchId: BRANCH, limit: 200, position: other.nextPosition! });
    expect(page.records.length).toBeGreaterThan(0);
    expect(page.records.every((r) => r.branch_id === BRANCH)).toBe(true);
    const byKey = await fixtureUsage.query({
      branchId: BRANCH,
      keyId: 'key_three',
      limit: 200,
      position: other.nextPosition!,
    });
    expect(byKey.records.every((r) => r.branch_id === BRANCH && r.key_id === 'key_three')).toBe(true);
  });

  it('refuses a position that is not one, including a raw table key', async () => {
    const rawKey = Buffer.from(JSON.stringify({ pk: `${OTHER}#0`, sk: at(1) })).toString('base64url');
    for (const position of ['nope', rawKey, Buffer.from('{"before":""}').toString('base64url')]) {
      await expect(fixtureUsage.query({ branchId: BRANCH, limit: 5, position })).rejects.toBeInstanceOf(
        InvalidUsagePositionError,
      );
    }
  });
});
