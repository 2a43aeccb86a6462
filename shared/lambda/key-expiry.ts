/**
 * "Key Expiring" events (docs/decisions.md "Key events"), once per key and expiry, for keys that
 * expire within 7 days: sent by the daily function and by `keys audit`. Each is claimed on the key
 * first (a conditional write), so two runs never send the same one twice.
 */
import type { ApiKeyRecord } from '../domain/key-record';
import type { KeyExpiryClaims } from '../data/repositories/key-expiry-claims';
import type { KeyEventEmitter } from '../data/key-events';
import { keyEvent, SERVICE_ACTOR } from '../domain/key-events';

export const EXPIRING_WITHIN_DAYS = 7;
const DAY_MS = 24 * 60 * 60 * 1000;

/** The end of the window: keys expiring before it get the event. */
export const expiringUntil = (now: Date): Date => new Date(now.getTime() + EXPIRING_WITHIN_DAYS * DAY_MS);

/** A key that expires within the window and has not had its event for this expiry. */
export const isExpiringSoon = (key: ApiKeyRecord, now: Date): boolean => {
  if (key.expires_at === undefined || key.revoked_at !== undefined) return false;
  const at = Date.parse(key.expires_at);
  return at >= now.getTime() && at <= expiringUntil(now).getTime() && key.expiring_event_for !== key.expires_at;
};

export interface ExpiringEventsInput {
  claims: Pick<KeyExpiryClaims, 'claimExpiringEvent'>;
  keyEvents: KeyEventEmitter;
  /** Keys to consider; only those expiring soon are claimed. */
  candidates: readonly ApiKeyRecord[];
  now?: Date;
}

/** Claims and sends the "Key Expiring" events of the candidates; the keys it sent one for. */
export const sendExpiringEvents = async ({
  claims,
  keyEvents,
  candidates,
  now = new Date(),
}: ExpiringEventsInput): Promise<ApiKeyRecord[]> => {
  const sent: ApiKeyRecord[] = [];
  for (const key of candidates) {
    if (!isExpiringSoon(key, now) || key.expires_at === undefined) continue;
    if (await claims.claimExpiringEvent(key.key_id, key.expires_at)) sent.push(key);
  }
  await keyEvents.emit(
    sent.map((key) => keyEvent('expiring', key, SERVICE_ACTOR, now, { expires_at: key.expires_at ?? '' })),
  );
  return sent;
};
