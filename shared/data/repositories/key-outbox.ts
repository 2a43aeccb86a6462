/**
 * The outbox of each key item (docs/decisions.md "Key events"): the entries of the key's actions
 * not yet both copied to the activity table and sent as key events, oldest first. An action adds
 * its entry in its own conditional write (keys.ts, `outboxAppend`), whatever is waiting; finishing
 * copies every entry (the log is ordered by time, not by arrival), sends the events strictly in
 * order, stopping at the first that is not sent, and removes an entry from the head only once it is
 * copied and sent, by a write conditional on its id.
 */
import { ResourceNotFoundException } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { appendPending, type ActivityEntry } from '../../domain/key-activity';
import { keyEventOfAction } from '../../domain/key-events';
import { ConditionNotMetError } from '../data-store-errors';
import { DynamoRepository } from '../dynamodb';
import { noKeyEvents, type KeyEventEmitter } from '../key-events';
import type { ActivityRepository } from './activity';
import { KeyReader, type StoredKey } from './key-reader';

/** An entry still waiting after a finishing pass, and what did not happen to it. */
export interface PendingEntry {
  entry: ActivityEntry;
  /** Copied to the activity table (false also when this repository has no activity table). */
  copied: boolean;
  /** The copy's error, when the copy was tried and failed. */
  copyError?: unknown;
  /** Its key event sent (the emitter logs why not, "Key event not sent"). */
  sent: boolean;
  /** Not tried: an earlier event of the key is not sent yet, and events go in order. */
  heldBack: boolean;
}

/** The key item's attribute that holds the waiting entries. */
const OUTBOX = 'outbox';

/** How an action's write adds its entry: the SET clause, its names and values, and a condition when it folds. */
export interface OutboxAppend {
  set: string;
  names: Record<string, string>;
  values: Record<string, unknown>;
  /** Only when folding: the outbox as read, so no entry finished meanwhile comes back. */
  condition?: string;
  /** The entries whose events the fold drops (their own entries are kept in the log first). */
  folded: ActivityEntry[];
}

/**
 * The outbox part of an action's write. Within the bound, a list append (a finisher may remove the
 * head meanwhile: the two commute). Past it, the whole outbox as read with the oldest folded
 * (shared/domain/key-activity.ts appendPending), on the condition that it still holds as many.
 */
export const outboxAppend = (stored: Pick<StoredKey, 'outbox'>, entry: ActivityEntry): OutboxAppend => {
  const waiting = stored.outbox ?? [];
  const next = appendPending(waiting, entry);
  const names = { '#outbox': OUTBOX };
  if (next.length === waiting.length + 1) {
    return {
      set: '#outbox = list_append(if_not_exists(#outbox, :noEntries), :entry)',
      names,
      values: { ':noEntries': [], ':entry': [entry] },
      folded: [],
    };
  }
  const kept = new Set(next.map(({ activity_id }) => activity_id));
  return {
    set: '#outbox = :outbox',
    names,
    values: { ':outbox': next, ':waiting': waiting.length },
    condition: 'size(#outbox) = :waiting',
    folded: waiting.filter(({ activity_id }) => !kept.has(activity_id)),
  };
};

export class KeyOutbox extends DynamoRepository {
  private readonly reader = new KeyReader(this.client, this.tableName);

  /**
   * @param activity where entries are copied; without it they stay on the item for a finisher that has it.
   * @param keyEvents where the events go; sending never fails a caller.
   */
  constructor(
    client: DynamoDBDocumentClient,
    tableName: string,
    private readonly activity?: ActivityRepository,
    private readonly keyEvents: KeyEventEmitter = noKeyEvents,
  ) {
    super(client, tableName);
  }

  /**
   * One finishing pass over a key item as read: every entry copied, events sent in order, each
   * entry removed from the head once copied and sent. A concurrent finisher may send an event this
   * pass sends too (never out of order, always under the entry's id), so consumers dedupe by it.
   * @returns the entries still waiting and why; never throws for a copy, a send or a removal
   */
  async finish({
    key_hash,
    start,
    outbox = [],
  }: Pick<StoredKey, 'key_hash' | 'start' | 'outbox'>): Promise<PendingEntry[]> {
    const copies = await Promise.all(outbox.map((entry) => this.copy(entry)));
    const pending: PendingEntry[] = [];
    let sending = true;
    let removing = true;
    for (const [index, entry] of outbox.entries()) {
      const sent: boolean = sending && (await this.keyEvents.emit([keyEventOfAction(entry, start)])).length === 0;
      const copy = copies[index]!;
      if (!sent || !copy.copied) pending.push({ entry, ...copy, sent, heldBack: !sending });
      // Only the head goes: once one entry stays, every later one stays behind it.
      removing = removing && sent && copy.copied && (await this.removeHead(entry, key_hash));
      sending = sent;
    }
    return pending;
  }

  /**
   * Finishes the outbox of one key item, read strongly consistent (the keys table's stream finisher).
   * @returns the entries still waiting; none when the key is gone
   */
  async finishKey(keyHash: string): Promise<PendingEntry[]> {
    const stored = await this.reader.getStored(keyHash);
    return stored ? this.finish(stored) : [];
  }

  /**
   * Finishes the outboxes of a branch's keys, so the activity read next agrees with the keys.
   * @throws the first failed copy: a log that lacks an action is not shown
   */
  async finishBranch(branchId: string): Promise<void> {
    if (!this.activity) return;
    for (const stored of await this.reader.listOfBranch(branchId)) {
      const failed = (await this.finish(stored)).find((entry) => entry.copyError !== undefined);
      if (failed) throw failed.copyError;
    }
  }

  /**
   * Finishes every outbox in the table (the local stack's start and operator commands). A Scan of
   * the whole table, filtered to items with entries waiting: its reads grow with the number of
   * keys, so it never runs on a request path.
   * @returns how many entries were waiting, and how many of them are still not sent, or not copied
   */
  async finishAll(): Promise<{ pending: number; unsent: number; uncopied: number }> {
    const sweep = { pending: 0, unsent: 0, uncopied: 0 };
    let found: StoredKey[];
    try {
      found = await this.scanItems<StoredKey>({
        FilterExpression: 'size(#outbox) > :none',
        ExpressionAttributeNames: { '#outbox': OUTBOX },
        ExpressionAttributeValues: { ':none': 0 },
        ConsistentRead: true,
      });
    } catch (error) {
      // No keys table yet (a fresh local DynamoDB before `tables create`): nothing is waiting.
      if ((error as Error).cause instanceof ResourceNotFoundException) return sweep;
      throw error;
    }
    for (const stored of found) {
      const left = await this.finish(stored);
      sweep.pending += stored.outbox?.length ?? 0;
      sweep.unsent += left.filter((entry) => !entry.sent).length;
      sweep.uncopied += left.filter((entry) => !entry.copied).length;
    }
    return sweep;
  }

  /** Puts entries an action is about to fold into the activity table, so the log keeps them; best effort. */
  async keepInLog(entries: readonly ActivityEntry[]): Promise<void> {
    await Promise.all(entries.map((entry) => this.copy(entry)));
  }

  /** An idempotent put of the entry into the activity table (its key is the entry's id). */
  private async copy(entry: ActivityEntry): Promise<Pick<PendingEntry, 'copied' | 'copyError'>> {
    if (!this.activity) return { copied: false };
    return this.activity.put(entry).then(
      () => ({ copied: true }),
      (copyError: unknown) => ({ copied: false, copyError }),
    );
  }

  /**
   * Removes a finished entry from the head of its item's outbox, on the condition that it is still
   * the head. False when the removal failed and the next should not be tried: only its events are
   * then sent again, under the same ids. A head that changed (finished by another, folded) is no failure.
   */
  private async removeHead(entry: ActivityEntry, keyHash: string): Promise<boolean> {
    const removal = this.updateItem({
      Key: { key_hash: keyHash },
      UpdateExpression: 'REMOVE #outbox[0]',
      ConditionExpression: '#outbox[0].activity_id = :id',
      ExpressionAttributeNames: { '#outbox': OUTBOX },
      ExpressionAttributeValues: { ':id': entry.activity_id },
    });
    return removal.then(
      () => true,
      (error: unknown) => error instanceof ConditionNotMetError,
    );
  }
}
