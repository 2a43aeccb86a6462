/**
 * Writes seen where the embedded DynamoDB stores them, for the local change feed
 * (docs/usage-rollups.md "Locally"): one HTTP hop per call instead of two through a proxy.
 *
 * Every dynalite write (PutItem, UpdateItem, DeleteItem, each put or delete of a BatchWriteItem)
 * runs, under its item's lock, `db.updateIndexes(store, table, before, after)` and then stores
 * or deletes the item. The capture hooks that one function (looked up on dynalite's `db` module
 * at each call) and the table's item store: the item before and after the write is remembered
 * when the indexes are updated, and reported once the item itself is stored, so a write that
 * failed is never reported and one that succeeded is reported before its caller gets the answer.
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';

type Item = Record<string, AttributeValue>;
type Callback = (error?: Error | null) => void;

/** One stored write: the item's keys and its images before and after (absent: no item). */
export interface CapturedWrite {
  keys: Item;
  before?: Item;
  after?: Item;
}

/** Who wants the writes of one table of one embedded DynamoDB. */
export interface WriteObserver {
  tableName: string;
  observe(write: CapturedWrite): void;
}

/** Where the observer of a store is kept: on the options dynalite keeps as `store.options`. */
export const WRITE_OBSERVER = Symbol.for('branch-api.local.writeObserver');
const PENDING = Symbol.for('branch-api.local.pendingWrites');
const INSTALLED = Symbol.for('branch-api.local.writeCapture');

interface TableDescription {
  TableName: string;
  KeySchema: { AttributeName: string }[];
}
interface ItemStore {
  put(key: string, value: unknown, callback: Callback): void;
  del(key: string, callback: Callback): void;
  [PENDING]?: Map<string, Pending>;
}
interface Store {
  options: { [WRITE_OBSERVER]?: WriteObserver };
  getItemDb(tableName: string): ItemStore;
}
type UpdateIndexes = (
  store: Store,
  table: TableDescription,
  before: Item | null | undefined,
  after: Item | null | undefined,
  callback: Callback,
) => void;
/** The part of dynalite's `db` module the capture uses. */
export interface DynaliteDb {
  updateIndexes: UpdateIndexes;
  createKey(item: Item, table: TableDescription): string;
  [INSTALLED]?: true;
}

interface Pending {
  write: CapturedWrite;
  observer: WriteObserver;
}

/**
 * The writes of an item store waiting for their item to be stored. An entry lives from the index
 * update to the item's put or delete, under the item's lock: at most one per write in flight.
 */
const pendingOf = (items: ItemStore): Map<string, Pending> => {
  const existing = items[PENDING];
  if (existing) return existing;
  const pending = new Map<string, Pending>();
  const settle = (key: string, error: Error | null | undefined) => {
    const entry = pending.get(key);
    if (!entry) return;
    pending.delete(key);
    if (!error) entry.observer.observe(entry.write);
  };
  const { put, del } = items;
  items.put = (key, value, callback) =>
    put.call(items, key, value, (error) => {
      settle(key, error);
      callback(error);
    });
  items.del = (key, callback) =>
    del.call(items, key, (error) => {
      settle(key, error);
      callback(error);
    });
  items[PENDING] = pending;
  return pending;
};

/** Hooks dynalite's `db` module once; stores without an observer are untouched. */
export const installWriteCapture = (db: DynaliteDb): void => {
  if (db[INSTALLED]) return;
  db[INSTALLED] = true;
  const updateIndexes = db.updateIndexes;
  db.updateIndexes = (store, table, before, after, callback) => {
    const observer = store.options[WRITE_OBSERVER];
    const item = after ?? before;
    if (!observer || observer.tableName !== table.TableName || !item) {
      return updateIndexes(store, table, before, after, callback);
    }
    updateIndexes(store, table, before, after, (error) => {
      if (!error) {
        const keys = Object.fromEntries(
          table.KeySchema.map(({ AttributeName }) => [AttributeName, item[AttributeName]!]),
        );
        const write = { keys, ...(before ? { before } : {}), ...(after ? { after } : {}) };
        pendingOf(store.getItemDb(table.TableName)).set(db.createKey(item, table), { write, observer });
      }
      callback(error);
    });
  };
};
