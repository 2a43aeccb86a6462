/**
 * The vocabulary of paging through a repository, shared by every repository. A repository pages
 * by position (`after`): the API's signed list cursor (shared/api/http/pagination.ts) and the
 * operator's usage-log position (UsageRepository) are each encodings of one.
 */

/** One page of items in a repository's order; `lastId` is where the next page starts after. */
export interface Page<T> {
  items: T[];
  hasMore: boolean;
  lastId?: string;
}

export interface PageRequest {
  limit: number;
  /** Start after this id. */
  after?: string;
}
