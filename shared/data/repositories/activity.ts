import type { ActivityEntry } from '../../domain/key-activity';
import { DynamoRepository } from '../dynamodb';
import { ACTIVITY_BY_KEY_INDEX } from '../tables';

export type { ActivityEntry };

export interface ActivityPageQuery {
  branchId: string;
  /** Only this key's actions. */
  keyId?: string;
  /** At most this many entries, newest first. */
  limit: number;
  /** Entries older than this position. */
  before?: string;
  /** Entries newer than this position. */
  after?: string;
}

/** A page of entries, newest first, and where the pages next to it start. */
export interface ActivityPage {
  entries: ActivityEntry[];
  /** Position for the newer page (`after`); absent on the newest. */
  newer?: string;
  /** Position for the older page (`before`); absent on the oldest. */
  older?: string;
}

/** The table's sort key: time first, so a branch's (or a key's) entries read newest first. */
const sortKeyOf = (entry: ActivityEntry): string => `${entry.at}#${entry.activity_id}`;

const toEntry = (item: Record<string, unknown>): ActivityEntry => {
  const { sk: _sk, ...entry } = item;
  return entry as unknown as ActivityEntry;
};

/**
 * The key activity log. Entries are written by the keys repository (shared/data/repositories/keys.ts)
 * from the pending entry each key action leaves on the key item, so a put may be repeated: it
 * writes the same item under the same key.
 */
export class ActivityRepository extends DynamoRepository {
  async put(entry: ActivityEntry): Promise<void> {
    await this.putItem({ Item: { ...entry, sk: sortKeyOf(entry) } });
  }

  /**
   * A page of `limit` entries, newest first: the newest, those just older than `before`, or those
   * just newer than `after` (positions a page gave as `older` / `newer`). One Query, of `limit` + 1
   * items to tell whether there are more.
   */
  async page({ branchId, keyId, limit, before, after }: ActivityPageQuery): Promise<ActivityPage> {
    const bound = after !== undefined ? ' AND sk > :bound' : before !== undefined ? ' AND sk < :bound' : '';
    const boundValue = after ?? before;
    const { items } = await this.queryItems(
      {
        // Key ids are unique across branches; the filter only keeps a mistaken id from leaking.
        ...(keyId === undefined ? {} : { IndexName: ACTIVITY_BY_KEY_INDEX, FilterExpression: 'branch_id = :branch' }),
        KeyConditionExpression: `${keyId === undefined ? 'branch_id = :branch' : 'key_id = :key'}${bound}`,
        ExpressionAttributeValues: {
          ':branch': branchId,
          ...(keyId === undefined ? {} : { ':key': keyId }),
          ...(boundValue === undefined ? {} : { ':bound': boundValue }),
        },
        // Newer entries are read oldest first from `after`, then turned around.
        ScanIndexForward: after !== undefined,
      },
      limit + 1,
    );
    const more = items.length > limit;
    const shown = items.slice(0, limit);
    if (after !== undefined) shown.reverse();
    // A position comes from a shown entry, so the other side of it has entries too.
    const hasNewer = after !== undefined ? more : before !== undefined;
    const hasOlder = after !== undefined ? true : more;
    const first = shown[0];
    const last = shown.at(-1);
    return {
      entries: shown.map(toEntry),
      ...(hasNewer && first ? { newer: String(first.sk) } : {}),
      ...(hasOlder && last ? { older: String(last.sk) } : {}),
    };
  }
}
