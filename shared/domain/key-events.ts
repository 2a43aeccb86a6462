/**
 * Key events (docs/decisions.md "Key events"): what happened to a key, in the shape EventBridge
 * carries and the local JSON-lines file holds. Built only from a key's public fields, so an event
 * can never carry a key value or its hash.
 */
import type { ActivityEntry } from './key-activity';

export const KEY_EVENT_SOURCE = 'branch-api';

export const KEY_EVENT_TYPES = {
  created: 'Key Created',
  updated: 'Key Updated',
  rolled: 'Key Rolled',
  revoked: 'Key Revoked',
  leaked: 'Key Leaked',
  disabled: 'Key Disabled',
  enabled: 'Key Enabled',
  expiring: 'Key Expiring',
  rate_limit_reached: 'Key Rate Limit Reached',
} as const;
export type KeyEventKind = keyof typeof KEY_EVENT_TYPES;
export type KeyEventType = (typeof KEY_EVENT_TYPES)[KeyEventKind];

/** The public fields of a key an event names. */
export interface KeyEventSubject {
  key_id: string;
  branch_id: string;
  name: string;
  start: string;
}

export interface KeyEventDetail extends KeyEventSubject {
  /**
   * What consumers de-duplicate by: the same event sent twice has the same id. A key action's is
   * its activity id (`<key id>#<version>`), the others' `<key id>#<kind>#<time>`.
   */
  event_id: string;
  /** Who did it: an operator identity, `github-secret-scanning`, or `branch-api` for the service itself. */
  actor: string;
  /** When it happened, ISO 8601 UTC. */
  time: string;
  /** What the kind of event adds: the report's `url` and `source`, `expires_at`, `rate_limit`. */
  [extra: string]: string;
}

/** One event, as EventBridge delivers it to a rule's target (the fields a rule can match). */
export interface KeyEvent {
  source: typeof KEY_EVENT_SOURCE;
  'detail-type': KeyEventType;
  time: string;
  detail: KeyEventDetail;
}

/** The actor of what the service does by itself (rate limit reached, expiring). */
export const SERVICE_ACTOR = 'branch-api';

/** @param extra what the kind adds; an `event_id` in it replaces the default one. */
export const keyEvent = (
  kind: KeyEventKind,
  key: KeyEventSubject,
  actor: string,
  at: Date = new Date(),
  extra: Readonly<Record<string, string>> = {},
): KeyEvent => {
  const time = at.toISOString();
  return {
    source: KEY_EVENT_SOURCE,
    'detail-type': KEY_EVENT_TYPES[kind],
    time,
    detail: {
      event_id: `${key.key_id}#${kind}#${time}`,
      ...extra,
      key_id: key.key_id,
      branch_id: key.branch_id,
      name: key.name,
      start: key.start,
      actor,
      time,
    },
  };
};

/**
 * The event of a key action, from its activity entry (shared/domain/key-activity.ts): the same
 * actor and time, the entry's details (a leak report's url and source, a roll's other key), and
 * the entry's id as the event's, so every send of it is recognisably the same event.
 */
export const keyEventOfAction = (entry: ActivityEntry, start: string): KeyEvent =>
  keyEvent(
    entry.action,
    { key_id: entry.key_id, branch_id: entry.branch_id, name: entry.key_name, start },
    entry.actor,
    new Date(entry.at),
    { ...entry.details, event_id: entry.activity_id },
  );

/**
 * Remembers which ids were seen within the last `periodMs`, so something happens at most once per
 * id per period in one container ("rate limit reached": once per key per hour). Holds at most
 * `max` ids; past that, the oldest entries are dropped first (an id then may fire again early).
 */
export class OncePerPeriod {
  private readonly seen = new Map<string, number>();
  constructor(
    private readonly periodMs: number,
    private readonly max = 10_000,
  ) {}

  /** True the first time `id` is seen in a period (and marks it), false otherwise. */
  first(id: string, at: number): boolean {
    const last = this.seen.get(id);
    if (last !== undefined && at - last < this.periodMs) return false;
    this.seen.delete(id);
    // Insertion order is age order: drop the oldest (the expired first) until there is room.
    for (const old of this.seen.keys()) {
      if (this.seen.size < this.max) break;
      this.seen.delete(old);
    }
    this.seen.set(id, at);
    return true;
  }

  get size(): number {
    return this.seen.size;
  }
}
