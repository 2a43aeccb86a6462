/**
 * What a write replaces, for the local change feed to emit what DynamoDB Streams emits
 * (docs/usage-rollups.md "Locally"): a put of a new item is an INSERT, a put that replaces an
 * item with different attributes a MODIFY, and a put that changes nothing no record at all (an
 * SDK retry of a put that had succeeded, a replay of a stored record). A PutItem learns what it
 * replaced from DynamoDB itself (`ReturnValues: ALL_OLD`, in the same atomic write); a
 * BatchWriteItem reads its items first, with writes of the same key run one at a time, so the
 * item read before it is the one it replaces.
 */
import {
  BatchGetItemCommand,
  GetItemCommand,
  type AttributeValue,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';

type Item = Record<string, AttributeValue>;

/** The same attributes and values, in whatever order. */
export const sameItem = (a: Item | undefined, b: Item | undefined): boolean => {
  const canonical = (item: Item) =>
    JSON.stringify(
      Object.keys(item)
        .sort()
        .map((name) => [name, item[name]]),
    );
  return a !== undefined && b !== undefined && canonical(a) === canonical(b);
};

/** The stream event of a put, given the item it replaced; undefined when it changed nothing. */
export const putEvent = (before: Item | undefined, after: Item): 'INSERT' | 'MODIFY' | undefined =>
  before === undefined ? 'INSERT' : sameItem(before, after) ? undefined : 'MODIFY';

/**
 * Runs `work` once no earlier call holding any of `keys` is running. Each call waits only for
 * calls registered before it, so there is no deadlock; the map holds only keys in flight.
 */
export const createKeyLocks = () => {
  const locks = new Map<string, Promise<void>>();
  return async <T>(keys: readonly string[], work: () => Promise<T>): Promise<T> => {
    const previous = [...new Set(keys)].flatMap((key) => {
      const held = locks.get(key);
      return held ? [held] : [];
    });
    let release: () => void = () => undefined;
    const mine = new Promise<void>((resolve) => (release = resolve));
    for (const key of keys) locks.set(key, mine);
    await Promise.all(previous);
    try {
      return await work();
    } finally {
      release();
      for (const key of keys) if (locks.get(key) === mine) locks.delete(key);
    }
  };
};

/** The stored items of these keys (consistent reads), by canonical key. */
export const readBefore = async (reader: DynamoDBClient, tableName: string, keys: readonly Item[]) => {
  const found = new Map<string, Item>();
  if (keys.length === 1) {
    const { Item: item } = await reader.send(
      new GetItemCommand({ TableName: tableName, Key: keys[0]!, ConsistentRead: true }),
    );
    if (item) found.set(JSON.stringify(keys[0]), item);
    return found;
  }
  let pending: Item[] = [...keys];
  while (pending.length > 0) {
    const output = await reader.send(
      new BatchGetItemCommand({ RequestItems: { [tableName]: { Keys: pending, ConsistentRead: true } } }),
    );
    for (const item of output.Responses?.[tableName] ?? []) found.set(JSON.stringify(keyOf(keys[0]!, item)), item);
    pending = (output.UnprocessedKeys?.[tableName]?.Keys ?? []) as Item[];
  }
  return found;
};

/** The key attributes of an item, in the order of a given key (so canonical keys compare). */
export const keyOf = (shape: Item, item: Item): Item =>
  Object.fromEntries(Object.keys(shape).map((name) => [name, item[name]!]));
