/**
 * DynamoDB's published size and capacity rules ("Item sizes and formats", "Read/write capacity
 * mode"), applied to items as the document client writes them (plain values): what an item weighs
 * against the 400 KB limit, what it costs to store, and the request units a call on it consumes.
 */

/** Bytes of a number: ~1 per two significant digits, plus 1 (and 1 more when negative). */
const numberSize = (value: number | bigint): number => {
  const text = String(value);
  const digits = text
    .replace(/^-|\.|e.*$/gi, '')
    .replace(/^0+/, '')
    .replace(/0+$/, '').length;
  return Math.ceil(Math.max(digits, 1) / 2) + 1 + (text.startsWith('-') ? 1 : 0);
};

/** Bytes of one attribute value: lists and maps add 3 bytes and 1 per element; a set is its elements. */
export const valueSize = (value: unknown): number => {
  if (value === null || value === undefined || typeof value === 'boolean') return 1;
  if (typeof value === 'number' || typeof value === 'bigint') return numberSize(value);
  if (typeof value === 'string') return Buffer.byteLength(value, 'utf8');
  if (value instanceof Uint8Array) return value.byteLength;
  if (value instanceof Set) return [...(value as Set<unknown>)].reduce<number>((sum, one) => sum + valueSize(one), 0);
  if (Array.isArray(value)) return value.reduce<number>((sum, one) => sum + 1 + valueSize(one), 3);
  return 3 + Object.keys(value).length + itemSize(value as Record<string, unknown>);
};

/** An item's size as DynamoDB counts it: per attribute, its name's UTF-8 bytes plus its value's. */
export const itemSize = (item: Record<string, unknown>): number =>
  Object.entries(item).reduce((size, [name, value]) => size + Buffer.byteLength(name, 'utf8') + valueSize(value), 0);

/** What DynamoDB stores and bills beside each item, in the table and in each index entry. */
export const STORAGE_OVERHEAD_BYTES = 100;

/** Write request units of writing an item of this size: 1 per KB started. */
export const writeUnits = (bytes: number): number => Math.max(1, Math.ceil(bytes / 1024));
