/**
 * Key activity records (docs/decisions.md "Key activity"): who did what to a key, when, and what
 * changed. Never a key value: `changes` holds settings only.
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

/** The changed settings between two views of a key: only fields whose value differs. */
export const diffSettings = (
  before: Readonly<Record<string, unknown>>,
  after: Readonly<Record<string, unknown>>,
  fields: readonly string[],
): Record<string, ActivityChange> => {
  const changes: Record<string, ActivityChange> = {};
  for (const field of fields) {
    const was = before[field] ?? null;
    const now = after[field] ?? null;
    if (JSON.stringify(was) !== JSON.stringify(now)) changes[field] = { before: was, after: now };
  }
  return changes;
};
