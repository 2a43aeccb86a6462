/**
 * Change capture in front of DynamoDB, for the local change feed and the verifier's recording
 * proxies alike (docs/decisions.md "Local store and change feed"): a write to a watched table is
 * forwarded, and what it changed is told as DynamoDB Streams records it — INSERT, MODIFY, REMOVE,
 * and nothing for a write that changed nothing (`sameItem`, the one rule of item equality). A
 * failed write changes nothing. Writes of the same items run one at a time, so the image read
 * before a write is the one it replaces; a lone PutItem or DeleteItem learns it from the same
 * atomic write (`ReturnValues: ALL_OLD`).
 */
import type { IncomingMessage } from 'node:http';
import { BatchGetItemCommand, DynamoDBClient, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { forwardTo, type Answer } from './forward';

export type Item = Record<string, AttributeValue>;
type Json = Record<string, unknown>;

export interface CapturedChange {
  table: string;
  eventName: 'INSERT' | 'MODIFY' | 'REMOVE';
  keys: Item;
  oldImage?: Item;
  newImage?: Item;
}

/** The same attributes and values, whatever the order of attributes, of map entries and of set members. */
export const sameItem = (a: Item | undefined, b: Item | undefined): boolean =>
  a !== undefined && b !== undefined && JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));

const canonical = (item: Item): unknown =>
  Object.keys(item)
    .sort()
    .map((name) => [name, canonicalValue(item[name]!)]);
const canonicalValue = (value: AttributeValue): unknown => {
  if (value.M) return { M: canonical(value.M) };
  if (value.L) return { L: value.L.map(canonicalValue) };
  const [type, set] = Object.entries(value)[0] ?? [];
  return type === 'SS' || type === 'NS' || type === 'BS' ? { [type]: [...(set as string[])].sort() } : value;
};

/** The stream event of a change from `before` to `after`; undefined when nothing changed. */
export const eventOf = (before: Item | undefined, after: Item | undefined): CapturedChange['eventName'] | undefined =>
  before === undefined
    ? after && 'INSERT'
    : after === undefined
      ? 'REMOVE'
      : sameItem(before, after)
        ? undefined
        : 'MODIFY';

/**
 * Runs `work` once no earlier call holding any of `keys` is running. Each call waits only for
 * calls registered before it, so there is no deadlock; the map holds only keys in flight.
 */
export const createKeyLocks = () => {
  const locks = new Map<string, Promise<void>>();
  return async <T>(keys: readonly string[], work: () => Promise<T>): Promise<T> => {
    const previous = [...new Set(keys)].flatMap((key) => locks.get(key) ?? []);
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

/** The DynamoDB operation of a request (`PutItem`, `Query`, …). */
export const operationOf = (req: IncomingMessage): string | undefined =>
  /^DynamoDB_20120810\.(\w+)$/.exec(String(req.headers['x-amz-target'] ?? ''))?.[1];

/** Tables whose changes are captured, with their key attributes (partition key first). */
type Watched = ReadonlyMap<string, readonly string[]>;

/** One item a write names in a watched table; `entry` is its part of the request (to match UnprocessedItems). */
interface Touched {
  table: string;
  keys: Item;
  /** The item a put writes whole; absent for a delete or an update. */
  put?: Item;
  update?: true;
  entry: unknown;
}

/** A request's or answer's JSON body (or a JSON log line); `{}` when it is none. */
export const parseBody = (body: Buffer | string): Json => {
  try {
    const parsed: unknown = JSON.parse(body.toString());
    return parsed && typeof parsed === 'object' ? (parsed as Json) : {};
  } catch {
    return {};
  }
};

/** An answer with another body: its own length, and no checksum of the body DynamoDB sent. */
const withBody = (answer: Answer, body: Json): Answer => {
  const { 'x-amz-crc32': _crc, ...headers } = answer.headers;
  const bytes = Buffer.from(JSON.stringify(body));
  return { ...answer, headers: { ...headers, 'content-length': String(bytes.length) }, body: bytes };
};

/** An item's key attributes, and its key as text (the same for a `Key` and for the whole item). */
const keysOf = (watched: Watched, table: string, item: Item): Item =>
  Object.fromEntries((watched.get(table) ?? []).flatMap((name) => (item[name] ? [[name, item[name]]] : [])));
const keyText = (watched: Watched, table: string, item: Item) =>
  JSON.stringify([table, ...(watched.get(table) ?? []).map((name) => item[name])]);

/** The items a write names in the watched tables. */
const touchedBy = (watched: Watched, operation: string | undefined, input: Json): Touched[] => {
  const one = (table: string, write: Json | undefined, entry: unknown): Touched =>
    write?.Item
      ? { table, keys: keysOf(watched, table, write.Item as Item), put: write.Item as Item, entry }
      : { table, keys: (write?.Key ?? {}) as Item, ...(operation === 'UpdateItem' ? { update: true } : {}), entry };
  let touched: Touched[] = [];
  if (operation === 'PutItem' || operation === 'UpdateItem' || operation === 'DeleteItem') {
    touched = [one(String(input.TableName), input, input)];
  } else if (operation === 'BatchWriteItem') {
    touched = Object.entries((input.RequestItems ?? {}) as Record<string, Json[]>).flatMap(([table, entries]) =>
      (Array.isArray(entries) ? entries : []).map((entry) =>
        one(table, (entry?.PutRequest ?? entry?.DeleteRequest) as Json | undefined, entry),
      ),
    );
  }
  return touched.filter((item) => watched.has(item.table));
};

/** The stored items of these (consistent reads), by key text. */
const readImages = async (reader: DynamoDBClient, watched: Watched, items: readonly Touched[]) => {
  const found = new Map<string, Item>();
  let pending: Record<string, { Keys: Item[]; ConsistentRead: true }> = {};
  for (const { table, keys } of new Map(
    items.map((item) => [keyText(watched, item.table, item.keys), item]),
  ).values()) {
    (pending[table] ??= { Keys: [], ConsistentRead: true }).Keys.push(keys);
  }
  while (Object.keys(pending).length > 0) {
    const output = await reader.send(new BatchGetItemCommand({ RequestItems: pending }));
    for (const [table, stored] of Object.entries(output.Responses ?? {})) {
      for (const item of stored) found.set(keyText(watched, table, item), item);
    }
    pending = (output.UnprocessedKeys ?? {}) as typeof pending;
  }
  return found;
};

/** A lone PutItem or DeleteItem asking for the item it replaced; the writer gets the answer it asked for. */
const writeReturningOld = async (target: URL, req: IncomingMessage, input: Json) => {
  const answer = await forwardTo(target, req, Buffer.from(JSON.stringify({ ...input, ReturnValues: 'ALL_OLD' })));
  const output = parseBody(answer.body);
  const old = output.Attributes as Item | undefined;
  if (input.ReturnValues === 'ALL_OLD' || answer.statusCode !== 200) return { answer, output, old };
  const { Attributes: _old, ...asked } = output;
  return { answer: withBody(answer, asked), output, old };
};

export interface ChangeCapture {
  /** Whether a request (its operation and parsed body) writes to a watched table. */
  touches(operation: string | undefined, input: Json): boolean;
  /** The items a write puts whole into the watched tables. */
  putsOf(operation: string, input: Json): { table: string; item: Item }[];
  /**
   * Forwards a write and hands what it changed to `record` before the answer is returned, while
   * the writes of the same items still wait.
   */
  write(
    req: IncomingMessage,
    body: Buffer,
    operation: string,
    input: Json,
    record: (changes: CapturedChange[]) => void,
  ): Promise<Answer>;
  close(): void;
}

/** @param watched tables whose changes are captured, with their key attributes (partition key first) */
export const startChangeCapture = (target: string, watched: Watched): ChangeCapture => {
  const targetUrl = new URL(target);
  const reader = new DynamoDBClient({
    endpoint: target,
    region: 'local',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  const exclusive = createKeyLocks();
  const textOf = (item: Touched) => keyText(watched, item.table, item.keys);

  /** The items before the write, the write's answer and output. */
  const forward = async (req: IncomingMessage, body: Buffer, operation: string, input: Json, touched: Touched[]) => {
    if (touched.length === 1 && (operation === 'PutItem' || operation === 'DeleteItem')) {
      const { answer, output, old } = await writeReturningOld(targetUrl, req, input);
      return { answer, output, before: new Map(old ? [[textOf(touched[0]!), old]] : []) };
    }
    const before = await readImages(reader, watched, touched);
    const answer = await forwardTo(targetUrl, req, body);
    return { answer, output: parseBody(answer.body), before };
  };

  /** What a successful write changed: items left unprocessed changed nothing; an update is read back. */
  const changesOf = async (touched: Touched[], output: Json, before: Map<string, Item>) => {
    const unprocessed = new Set(
      Object.values((output.UnprocessedItems ?? {}) as Record<string, unknown[]>).flatMap((entries) =>
        entries.map((entry) => JSON.stringify(entry)),
      ),
    );
    const done = touched.filter((item) => !unprocessed.has(JSON.stringify(item.entry)));
    const updated = await readImages(
      reader,
      watched,
      done.filter((item) => item.update),
    );
    return done.flatMap((item): CapturedChange[] => {
      const [oldImage, newImage] = [before.get(textOf(item)), item.put ?? updated.get(textOf(item))];
      const eventName = eventOf(oldImage, newImage);
      const images = { ...(oldImage && { oldImage }), ...(newImage && { newImage }) };
      return eventName ? [{ table: item.table, eventName, keys: item.keys, ...images }] : [];
    });
  };

  return {
    touches: (operation, input) => touchedBy(watched, operation, input).length > 0,
    putsOf: (operation, input) =>
      touchedBy(watched, operation, input).flatMap(({ table, put }) => (put ? [{ table, item: put }] : [])),
    write: (req, body, operation, input, record) => {
      const touched = touchedBy(watched, operation, input);
      return exclusive(touched.map(textOf), async () => {
        const { answer, output, before } = await forward(req, body, operation, input, touched);
        if (answer.statusCode === 200) record(await changesOf(touched, output, before));
        return answer;
      });
    },
    close: () => reader.destroy(),
  };
};
