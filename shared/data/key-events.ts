/**
 * Where key events go (docs/decisions.md "Key events"): an EventBridge bus deployed, a JSON-lines
 * file locally. Emitting never rejects: a failed send is retried, then logged at error level
 * ("Key event not sent", with why) and handed back, so a key action's entry waits until it is sent.
 */
import { appendFile } from 'node:fs/promises';
import { EventBridgeClient, PutEventsCommand, type PutEventsRequestEntry } from '@aws-sdk/client-eventbridge';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import type { KeyEvent } from '../domain/key-events';

export interface KeyEventEmitter {
  /** Sends the events; resolves to the ones that could not be sent (never rejects). */
  emit(events: readonly KeyEvent[]): Promise<readonly KeyEvent[]>;
}

export interface EmitterLogger {
  error(message: string, extra: Record<string, unknown>): void;
}

/** Attempts per event, first included. */
export const KEY_EVENT_ATTEMPTS = 3;
/** The log message of an event that could not be sent; its `key_event` field is the event to replay. */
export const KEY_EVENT_NOT_SENT = 'Key event not sent';
/** PutEvents takes at most 10 entries per call. */
const PUT_EVENTS_BATCH = 10;

/** What one send left: the events not taken, and why. */
interface SendOutcome {
  failed: readonly KeyEvent[];
  error?: unknown;
}

/** Sends events through `send`, retrying the ones it did not take, logging what is left and why. */
const withRetries =
  (send: (events: readonly KeyEvent[]) => Promise<SendOutcome>, logger: EmitterLogger) =>
  async (events: readonly KeyEvent[]): Promise<readonly KeyEvent[]> => {
    let pending = events;
    let lastError: unknown;
    for (let attempt = 0; attempt < KEY_EVENT_ATTEMPTS && pending.length > 0; attempt += 1) {
      try {
        const { failed, error } = await send(pending);
        pending = failed;
        lastError = error ?? lastError;
      } catch (error) {
        lastError = error;
      }
    }
    for (const event of pending) logger.error(KEY_EVENT_NOT_SENT, { key_event: event, error: lastError });
    return pending;
  };

/** No destination: nothing to send, so nothing is left unsent (the tooling warns that events go nowhere). */
export const noKeyEvents: KeyEventEmitter = { emit: async () => [] };

/** Appends one JSON line per event to `path`. */
export const fileKeyEvents = (path: string, logger: EmitterLogger): KeyEventEmitter => ({
  emit: withRetries(async (events) => {
    if (events.length > 0) await appendFile(path, events.map((event) => `${JSON.stringify(event)}\n`).join(''));
    return { failed: [] };
  }, logger),
});

const toEntry = (event: KeyEvent, busName: string): PutEventsRequestEntry => ({
  EventBusName: busName,
  Source: event.source,
  DetailType: event['detail-type'],
  Detail: JSON.stringify(event.detail),
  Time: new Date(event.time),
});

/** PutEvents on the bus; entries EventBridge refuses are retried like a failed call. */
export const eventBridgeKeyEvents = (
  client: Pick<EventBridgeClient, 'send'>,
  busName: string,
  logger: EmitterLogger,
): KeyEventEmitter => ({
  emit: withRetries(async (events) => {
    const failed: KeyEvent[] = [];
    let error: unknown;
    for (let at = 0; at < events.length; at += PUT_EVENTS_BATCH) {
      const batch = events.slice(at, at + PUT_EVENTS_BATCH);
      // A batch that fails as a whole is retried alone, so the ones sent before it are not sent twice.
      const result = await client
        .send(new PutEventsCommand({ Entries: batch.map((event) => toEntry(event, busName)) }))
        .catch((failure: unknown) => void (error = failure));
      if (!result) failed.push(...batch);
      (result?.Entries ?? []).forEach((entry, index) => {
        if (!entry.ErrorCode || !batch[index]) return;
        failed.push(batch[index]);
        error = new Error(`EventBridge refused the event: ${entry.ErrorCode} ${entry.ErrorMessage ?? ''}`.trim());
      });
    }
    return { failed, error };
  }, logger),
});

export interface KeyEventSettings {
  /** The bus deployed; wins over `file`. */
  readonly busName?: string;
  /** The local JSON-lines file. */
  readonly file?: string;
  readonly region?: string;
}

/** The emitter a configuration names: the bus, the file, or none. */
export const createKeyEventEmitter = (settings: KeyEventSettings, logger: EmitterLogger): KeyEventEmitter => {
  if (settings.busName) {
    const { busName, region } = settings;
    // Made at the first event sent, not at import: most containers never send one.
    let client: EventBridgeClient | undefined;
    const create = () =>
      new EventBridgeClient({
        ...(region ? { region } : {}),
        // Bounded like the DynamoDB client: a "rate limit reached" event is awaited before its 429.
        maxAttempts: 2,
        requestHandler: new NodeHttpHandler({
          connectionTimeout: 500,
          requestTimeout: 1000,
          throwOnRequestTimeout: true,
        }),
      });
    const lazyClient = {
      send: (command: PutEventsCommand) => (client ??= create()).send(command),
    } as Pick<EventBridgeClient, 'send'>;
    return eventBridgeKeyEvents(lazyClient, busName, logger);
  }
  if (settings.file) return fileKeyEvents(settings.file, logger);
  return noKeyEvents;
};
