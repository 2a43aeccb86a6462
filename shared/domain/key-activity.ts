/**
 * Key activity records (docs/decisions.md "Key activity"): who did what to a key, when, and what
 * changed. Never a key value: `changes` holds settings only. Until an entry is copied to the
 * activity table and sent as its key event it waits on the key item, in order ("Key events").
 */

/** Every key action that is recorded; `leaked` comes from a secret-scanning report. */
export const KEY_ACTIONS = ['created', 'updated', 'disabled', 'enabled', 'rolled', 'revoked', 'leaked'] as const;
export type KeyAction = (typeof KEY_ACTIONS)[number];

/** A setting before and after an action; `null` where it was (or became) unset. */
export interface ActivityChange {
  before: unknown;
  after: unknown;
}

export interface ActivityEntry {
  /** `<key id>#<key version>`: one action of one key; writing it twice changes nothing. */
  activity_id: string;
  branch_id: string;
  key_id: string;
  /** The key's name when the action happened, so a renamed or deleted key still reads well. */
  key_name: string;
  action: KeyAction;
  /** The OS user locally, the IAM principal ARN against AWS, or the system that acted. */
  actor: string;
  /** ISO 8601 UTC. */
  at: string;
  changes: Record<string, ActivityChange>;
  /** Extra facts of the action (a roll's new key id, a leak report's url and source). */
  details?: Record<string, string>;
}

/** Fields of a key whose before/after an entry records. */
export const RECORDED_FIELDS = [
  'name',
  'scopes',
  'expires_at',
  'allowed_ips',
  'rate_limit',
  'disabled_at',
  'revoked_at',
  'rolled_to',
  'rolled_from',
] as const;

/** The changed settings between two views of a key: only recorded fields whose value differs. */
const changesBetween = (before: Record<string, unknown>, after: Record<string, unknown>) =>
  Object.fromEntries(
    RECORDED_FIELDS.map((field) => ({ field, before: before[field] ?? null, after: after[field] ?? null }))
      .filter((change) => JSON.stringify(change.before) !== JSON.stringify(change.after))
      .map(({ field, ...change }): [string, ActivityChange] => [field, change]),
  );

/** The entry of an action that took a key from `before` to `after` (whose version it is keyed by). */
export const actionEntry = (
  before: object,
  after: { key_id: string; branch_id: string; name: string; version?: number },
  action: KeyAction,
  actor: string,
  now: Date,
  details?: Record<string, string>,
): ActivityEntry => ({
  activity_id: `${after.key_id}#${after.version ?? 0}`,
  branch_id: after.branch_id,
  key_id: after.key_id,
  key_name: after.name,
  action,
  actor,
  at: now.toISOString(),
  changes: changesBetween(before as Record<string, unknown>, after as Record<string, unknown>),
  ...(details ? { details } : {}),
});

/**
 * Entries that wait on one key item at most. An entry is at most about 6 KB (a 200-character name
 * and a 50-block allowlist, before and after; a leak's url is 2,048 characters and comes last), so
 * the item stays near 130 KB at worst, a third of DynamoDB's 400 KB (docs/decisions.md "Key events").
 */
export const MAX_PENDING_ENTRIES = 20;

/** What an entry says when older entries were folded into it: how many events, and the first one's id. */
export const EVENTS_NOT_SENT = 'events_not_sent';
export const FIRST_EVENT_NOT_SENT = 'first_event_not_sent';

/** `oldest` folded into `next`: its event will never be sent, and `next` counts it. */
const fold = (oldest: ActivityEntry, next: ActivityEntry): ActivityEntry => ({
  ...next,
  details: {
    ...next.details,
    [EVENTS_NOT_SENT]: String(Number(oldest.details?.[EVENTS_NOT_SENT] ?? 0) + 1),
    [FIRST_EVENT_NOT_SENT]: oldest.details?.[FIRST_EVENT_NOT_SENT] ?? oldest.activity_id,
  },
});

/**
 * The waiting entries once `entry` joins them, oldest first: past `max`, the oldest is folded into
 * the one after it, so an action is never refused for want of room.
 */
export const appendPending = (
  waiting: readonly ActivityEntry[],
  entry: ActivityEntry,
  max = MAX_PENDING_ENTRIES,
): ActivityEntry[] => {
  const entries = [...waiting, entry];
  while (entries.length > Math.max(max, 2)) entries.splice(0, 2, fold(entries[0]!, entries[1]!));
  return entries;
};
