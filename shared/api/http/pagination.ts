/**
 * List parameters (`limit`, `cursor`) and cursors. A cursor names the last id of a page and
 * carries a check value bound to the branch and the list it came from, so a mistyped, truncated
 * or mixed-up cursor (another list's, another branch's) is a 400. The check is not keyed with a
 * secret: a caller can build a cursor for any position of a list its key already reads, which
 * shows nothing paging would not. No cursor reaches further, because the partition key of every
 * query is the key's own branch (docs/decisions.md "Cursors").
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { ID_PATTERN } from '../../domain/ids';
import type { List } from '../../domain/schemas';
import type { Page, PageRequest } from '../../data/repositories/page';
import { invalidRequest } from '../errors';
import type { ApiEvent } from './response';

export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 100;
/**
 * The exact text `limit` accepts: a whole number from 1 to MAX_LIMIT in plain decimal digits, no
 * sign, exponent, leading zero or space. The OpenAPI document publishes this pattern as the
 * parameter's schema, so every validator, coercing or not, answers as this code does
 * (docs/decisions.md "HTTP contract").
 */
export const LIMIT_PATTERN = /^(?:100|[1-9][0-9]?)$/;
const DIGEST_CHARS = 22;

export type ListName = 'members' | 'payment_providers';

/** Unkeyed by design (see the module comment). */
const digest = (list: ListName, branchId: string, after: string): string =>
  createHash('sha256').update(`${list}\0${branchId}\0${after}`).digest('base64url').slice(0, DIGEST_CHARS);

export const encodeCursor = (list: ListName, branchId: string, after: string): string =>
  `${Buffer.from(after).toString('base64url')}.${digest(list, branchId, after)}`;

const badCursor = () => invalidRequest('The cursor is not valid. Use next_cursor from a previous page of this list.');

export const decodeCursor = (list: ListName, branchId: string, cursor: string): string => {
  const [encoded, given, ...rest] = cursor.split('.');
  if (!encoded || !given || rest.length > 0) throw badCursor();
  const after = Buffer.from(encoded, 'base64url').toString('utf8');
  const expected = Buffer.from(digest(list, branchId, after));
  const actual = Buffer.from(given);
  // Only the canonical encoding: Node's base64url decoder ignores padding, stray characters and spare bits.
  const canonical = Buffer.from(after).toString('base64url') === encoded;
  if (
    !canonical ||
    !ID_PATTERN.test(after) ||
    actual.length !== expected.length ||
    !timingSafeEqual(expected, actual)
  ) {
    throw badCursor();
  }
  return after;
};

/** Reads `limit` and `cursor` of a list request; anything out of range is a 400. */
export const readPageRequest = (event: ApiEvent, list: ListName, branchId: string): PageRequest => {
  const query = event.queryStringParameters ?? {};
  let limit = DEFAULT_LIMIT;
  if (query.limit !== undefined) {
    if (!LIMIT_PATTERN.test(query.limit)) {
      throw invalidRequest(`limit must be a whole number from 1 to ${MAX_LIMIT}.`);
    }
    limit = Number(query.limit);
  }
  const cursor = query.cursor;
  if (cursor === undefined) return { limit };
  return { limit, after: decodeCursor(list, branchId, cursor) };
};

export const toList = <T>(page: Page<T>, list: ListName, branchId: string): List<T> => ({
  object: 'list',
  data: page.items,
  has_more: page.hasMore,
  next_cursor: page.hasMore && page.lastId ? encodeCursor(list, branchId, page.lastId) : null,
});
