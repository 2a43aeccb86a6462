/**
 * The embedded DynamoDB's in-memory store, kept to what its data weighs (docs/capacity.md "Local
 * stack").
 *
 * dynalite keeps its data in memory-level, whose default store encoding keeps every key and value
 * as a Buffer: a small one is a slice of Node's shared 8 KB allocation pool, and one kept slice
 * keeps its whole slab alive, so the store pinned every slab the process filled (HTTP bodies, JSON,
 * the SDK): `npm start` grew by about 18 KB per request. Owned copies still cost a separate
 * allocation per key and value (about 6 KB of RSS per call). With memory-level's `utf8` store
 * encoding, keys and values are plain strings on the heap. dynalite takes no store option, so the
 * class it constructs is swapped before dynalite is first loaded; its keys are ASCII, where string
 * and byte order agree.
 *
 * A table's index with an ALL projection stores the very item the table stores (the usage table's
 * by-key index: every call): dynalite writes the index entry and then the item, each serialized on
 * its own. The store keeps one string for both (`RecentValues`): a value equal to one stored
 * moments before is stored as that same string. Other writes come in between under load (16
 * calls at once, rate-limit counters, rollups), so it looks among the recent values, not only at
 * the last one: comparing with the last one alone shared 8 values of 2,000 at concurrency 16.
 */
type Callback = () => void;
interface LevelIterator {
  next(): Promise<[string, string] | undefined>;
  close(): Promise<void>;
}
interface Level {
  _put(key: string, value: string, options: unknown, callback?: Callback): Promise<void> | void;
  iterator(options: Record<string, unknown>): LevelIterator;
  recentValues?: RecentValues;
}
type LevelClass = new (options?: Record<string, unknown>) => Level;
type StringStoreClass = LevelClass & { stringStore?: true; lastCreated?: Level };

/** How many recent values are kept to be shared, and the longest kept: at most 1 MB pinned. */
export const RECENT_VALUES = { count: 128, maxChars: 8_192 } as const;

/**
 * Values stored moments ago that no later value has matched yet, by content: `share` returns the
 * kept string equal to the one given, or keeps the given one. A value matched once is let go (an
 * index entry and its item are a pair); the oldest goes past `RECENT_VALUES.count`.
 */
export class RecentValues {
  private readonly kept = new Map<string, string>();
  /** Values stored as a string kept before: the bytes of each are held once, not twice. */
  shared = 0;
  get size(): number {
    return this.kept.size;
  }
  share(value: string): string {
    if (value.length > RECENT_VALUES.maxChars) return value;
    const earlier = this.kept.get(value);
    if (earlier !== undefined) {
      this.kept.delete(value);
      this.shared += 1;
      return earlier;
    }
    this.kept.set(value, value);
    if (this.kept.size > RECENT_VALUES.count) this.kept.delete(this.kept.keys().next().value!);
    return value;
  }
}

/** What the store holds: entries and the characters of their keys and values, per table or index. */
export interface StoredData {
  entries: number;
  /** Characters of keys and values (ASCII keys, JSON values: about their bytes). */
  chars: number;
  /** Per sub-store, as dynalite names them: `item-<table>`, `index-global~<table>~<index>`, `table`. */
  byPart: Record<string, { entries: number; chars: number }>;
  /** Values stored as the string of an equal value stored before (held once for two entries). */
  valuesShared: number;
}

/** Makes memory-level (as dynalite loads it) store strings; idempotent. */
export const installStringStore = (memoryLevel: { MemoryLevel: StringStoreClass }): void => {
  if (memoryLevel.MemoryLevel.stringStore) return;
  const Original = memoryLevel.MemoryLevel;
  class StringStore extends Original {
    static override readonly stringStore = true as const;
    /** The store dynalite created last: its data is what `storedData` reads. */
    static override lastCreated: Level | undefined;
    override readonly recentValues = new RecentValues();
    constructor(options: Record<string, unknown> = {}) {
      super({ storeEncoding: 'utf8', ...options });
      StringStore.lastCreated = this;
    }
    override _put(key: string, value: string, options: unknown, callback?: Callback) {
      return super._put(key, this.recentValues.share(value), options, callback);
    }
  }
  memoryLevel.MemoryLevel = StringStore;
};

/** The store the last embedded DynamoDB created (undefined when it keeps its data on disk). */
export const lastCreatedStore = (memoryLevel: { MemoryLevel: StringStoreClass }): Level | undefined =>
  memoryLevel.MemoryLevel.lastCreated;

/** Reads the whole store once: for the benchmark's figure of what a session holds. */
export const storedData = async (store: Level): Promise<StoredData> => {
  const data: StoredData = { entries: 0, chars: 0, byPart: {}, valuesShared: store.recentValues?.shared ?? 0 };
  const iterator = store.iterator({ keyEncoding: 'utf8', valueEncoding: 'utf8' });
  try {
    for (let entry = await iterator.next(); entry; entry = await iterator.next()) {
      const [key, value] = entry;
      const pieces = key.split('~');
      const part = pieces.slice(0, key.startsWith('index-') ? 3 : 1).join('~');
      const chars = key.length + value.length;
      const one = (data.byPart[part] ??= { entries: 0, chars: 0 });
      one.entries += 1;
      one.chars += chars;
      data.entries += 1;
      data.chars += chars;
    }
  } finally {
    await iterator.close();
  }
  return data;
};
