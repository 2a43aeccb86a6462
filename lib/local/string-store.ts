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
 * its own. The store keeps one string for both: a value equal to the one stored just before is
 * stored as that same string.
 */
type Callback = () => void;
interface LevelIterator {
  next(): Promise<[string, string] | undefined>;
  close(): Promise<void>;
}
interface Level {
  _put(key: string, value: string, options: unknown, callback?: Callback): Promise<void> | void;
  iterator(options: Record<string, unknown>): LevelIterator;
}
type LevelClass = new (options?: Record<string, unknown>) => Level;
type StringStoreClass = LevelClass & { stringStore?: true; lastCreated?: Level };

/** What the store holds: entries and the characters of their keys and values, per table or index. */
export interface StoredData {
  entries: number;
  /** Characters of keys and values (ASCII keys, JSON values: about their bytes). */
  chars: number;
  /** Per sub-store, as dynalite names them: `item-<table>`, `index-global~<table>~<index>`, `table`. */
  byPart: Record<string, { entries: number; chars: number }>;
}

/** Makes memory-level (as dynalite loads it) store strings; idempotent. */
export const installStringStore = (memoryLevel: { MemoryLevel: StringStoreClass }): void => {
  if (memoryLevel.MemoryLevel.stringStore) return;
  const Original = memoryLevel.MemoryLevel;
  class StringStore extends Original {
    static override readonly stringStore = true as const;
    /** The store dynalite created last: its data is what `storedData` reads. */
    static override lastCreated: Level | undefined;
    private lastValue = '';
    constructor(options: Record<string, unknown> = {}) {
      super({ storeEncoding: 'utf8', ...options });
      StringStore.lastCreated = this;
    }
    override _put(key: string, value: string, options: unknown, callback?: Callback) {
      // Equal strings, one copy: `===` compares content, and the kept one is stored again.
      const shared = value === this.lastValue ? this.lastValue : value;
      this.lastValue = shared;
      return super._put(key, shared, options, callback);
    }
  }
  memoryLevel.MemoryLevel = StringStore;
};

/** The store the last embedded DynamoDB created (undefined when it keeps its data on disk). */
export const lastCreatedStore = (memoryLevel: { MemoryLevel: StringStoreClass }): Level | undefined =>
  memoryLevel.MemoryLevel.lastCreated;

/** Reads the whole store once: for the benchmark's figure of what a session holds. */
export const storedData = async (store: Level): Promise<StoredData> => {
  const data: StoredData = { entries: 0, chars: 0, byPart: {} };
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
