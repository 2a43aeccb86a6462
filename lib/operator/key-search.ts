/**
 * Finding a branch's keys (`keys list`, the console's search): by status, name, key id, or the
 * start of a key's value; a whole value is hashed and looked up as the API looks it up, never kept.
 */
import { API_KEY_LENGTH, API_KEY_PREFIX, hashApiKey, isWellFormedApiKey } from '../../shared/domain/api-key';
import type { KeyState } from '../../shared/domain/key-state';
import type { OperatorContext } from './context';

/** What a filter reads of a key. */
interface Findable {
  key_id: string;
  name: string;
  start: string;
  status: KeyState;
}

/** Which keys a listing keeps. */
export interface KeyFilter {
  status?: KeyState;
  /** Part of the name, any case. */
  name?: string;
  /** Part of the name or key id (any case), or the start of the key's value (`wsk_F9Lf`). */
  search?: string;
  /** The start of the key's value; a whole value is hashed and matched, never kept. */
  valuePrefix?: string;
}

/** Only a key's first characters are kept (`start`): a longer prefix is matched on those. */
const valueStartsWith = (start: string, prefix: string): boolean =>
  prefix.startsWith(API_KEY_PREFIX) &&
  (prefix.length <= start.length ? start.startsWith(prefix) : prefix.startsWith(start));

/** A search as long as a key is a whole value: hashed and matched (one not well formed matches none). */
export const isWholeValue = (text: string): boolean => text.startsWith(API_KEY_PREFIX) && text.length >= API_KEY_LENGTH;

const includesAnyCase = (text: string, part: string): boolean => text.toLowerCase().includes(part.toLowerCase());

/** Whether a listing keeps a key; `byValue`: the key id a whole value in the filter hashed to ('' for none). */
export const matchesKey = (
  key: Findable,
  { status, name, search, valuePrefix }: KeyFilter,
  byValue: string | null = null,
): boolean =>
  (status === undefined || key.status === status) &&
  (name === undefined || includesAnyCase(key.name, name)) &&
  (valuePrefix === undefined ||
    (byValue !== null ? key.key_id === byValue : valueStartsWith(key.start, valuePrefix))) &&
  (search === undefined ||
    (byValue !== null
      ? key.key_id === byValue
      : includesAnyCase(`${key.name}\n${key.key_id}`, search) || valueStartsWith(key.start, search)));

/**
 * The id of the branch's key whose whole value this is, or null: the value is hashed and looked
 * up as the API looks it up, and neither kept nor logged.
 */
export const keyIdOfValue = async (ctx: OperatorContext, branchId: string, value: string): Promise<string | null> => {
  if (!isWellFormedApiKey(value)) return null;
  const record = await ctx.keys.getByHash(hashApiKey(value));
  return record?.branch_id === branchId ? record.key_id : null;
};
