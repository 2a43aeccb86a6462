/**
 * The write shards of the usage table (shared/data/tables.ts USAGE_WRITE_SHARDS): which shard a
 * record goes to, and the newest-first merge every reader goes through. Pure: the reading of one
 * shard is passed in.
 */
import pLimit from 'p-limit';
import { USAGE_WRITE_SHARDS } from '../tables';

type Item = Record<string, unknown>;

/** A record's shard, from its request id: the same record always lands on the same item. FNV-1a. */
export const usageShardOf = (requestId: string, shards = USAGE_WRITE_SHARDS): number => {
  let hash = 0x811c9dc5;
  for (let i = 0; i < requestId.length; i += 1) {
    hash ^= requestId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % shards;
};

/** One page of one shard, newest first: its items and, when it has more, the key to read on from. */
export interface ShardPage {
  items: Item[];
  lastKey?: Item;
}

/** Reads one page of a shard, from its start or after `startKey`. */
export type ShardReader = (shard: number, startKey?: Item) => Promise<ShardPage>;

interface ShardState extends ShardPage {
  readonly shard: number;
}

/** Shards read at once by one merge: a burst of a connection per shard timed out on a busy machine. */
const SHARD_READS_AT_ONCE = 4;

/** `work` over `inputs`, at most SHARD_READS_AT_ONCE at a time, results in input order. */
export const inTurn = <I, O>(inputs: readonly I[], work: (input: I) => Promise<O>): Promise<O[]> =>
  pLimit(SHARD_READS_AT_ONCE).map(inputs, work);

const sortKeyOf = (item: Item): string => String(item.sk);
const newestFirst = (a: Item, b: Item): number => {
  const [x, y] = [sortKeyOf(a), sortKeyOf(b)];
  return x < y ? 1 : x > y ? -1 : 0;
};

/**
 * The newest `limit` items across the shards, newest first, and whether more remain. A shard with
 * more holds back everything older than its last item, so only items at or above the highest such
 * boundary are final; while fewer than `limit` are, the shards at that boundary read on.
 */
export const mergeNewestFirst = async (
  read: ShardReader,
  limit: number,
  shards = USAGE_WRITE_SHARDS,
): Promise<{ items: Item[]; more: boolean }> => {
  const states: ShardState[] = await inTurn(
    Array.from({ length: shards }, (_, shard) => shard),
    async (shard) => ({ shard, ...(await read(shard)) }),
  );
  for (;;) {
    const open = states.filter((state) => state.lastKey !== undefined);
    let boundary: string | undefined;
    for (const state of open) {
      const at = sortKeyOf(state.lastKey!);
      if (boundary === undefined || at > boundary) boundary = at;
    }
    const buffered = states.flatMap((state) => state.items);
    const final = boundary === undefined ? buffered : buffered.filter((item) => sortKeyOf(item) >= boundary);
    if (final.length >= limit || boundary === undefined) {
      const items = final.sort(newestFirst).slice(0, limit);
      return { items, more: open.length > 0 || buffered.length > items.length };
    }
    await inTurn(
      open.filter((state) => sortKeyOf(state.lastKey!) === boundary),
      async (state) => {
        const page = await read(state.shard, state.lastKey);
        state.items.push(...page.items);
        state.lastKey = page.lastKey;
      },
    );
  }
};
