/**
 * Key events (docs/decisions.md "Key events"): the JSON-lines file, EventBridge PutEvents retried
 * then logged for replay, and "rate limit reached" once per key per hour per container, through the
 * real functions on the embedded DynamoDB.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KEY_EVENT_ATTEMPTS, KEY_EVENT_NOT_SENT, eventBridgeKeyEvents, fileKeyEvents } from '../shared/data/key-events';
import { keyEvent, KEY_EVENT_TYPES, OncePerPeriod } from '../shared/domain/key-events';
import { createKey, expectError, invoke, loadService, setUpBranches } from './support/harness';
import { readEventsFile } from './support/secret-scanning';
import { eventBridgeEndpoint } from './support/event-bridge';
import { mainBranch } from './support/fixtures';
import { createOperatorContext } from '../lib/operator/context';
import {
  createKey as createOperatorKey,
  disableKey,
  enableKey,
  revokeKey,
  rollKey,
  updateKey,
} from '../lib/operator/keys';

const subject = { key_id: 'key_1', branch_id: 'br_1', name: 'CI', start: 'wsk_AbCd' };
const tempFile = () => join(mkdtempSync(join(tmpdir(), 'key-events-')), 'events.jsonl');
const linesOf = readEventsFile;

describe('an event', () => {
  it('has the EventBridge shape: source, detail-type, time, and a detail of public key fields, the actor and the time', () => {
    const at = new Date('2030-01-02T03:04:05.000Z');
    expect(keyEvent('revoked', { ...subject, key_hash: 'secret' } as typeof subject, 'alice', at)).toEqual({
      source: 'branch-api',
      'detail-type': 'Key Revoked',
      time: '2030-01-02T03:04:05.000Z',
      detail: {
        ...subject,
        event_id: 'key_1#revoked#2030-01-02T03:04:05.000Z',
        actor: 'alice',
        time: '2030-01-02T03:04:05.000Z',
      },
    });
    expect(Object.values(KEY_EVENT_TYPES)).toEqual([
      'Key Created',
      'Key Updated',
      'Key Rolled',
      'Key Revoked',
      'Key Leaked',
      'Key Disabled',
      'Key Enabled',
      'Key Expiring',
      'Key Rate Limit Reached',
    ]);
  });
});

describe('the JSON-lines file', () => {
  it('gets one line per event, in order', async () => {
    const file = tempFile();
    const errors: unknown[] = [];
    const emitter = fileKeyEvents(file, { error: (...args) => errors.push(args) });
    await emitter.emit([keyEvent('created', subject, 'alice'), keyEvent('revoked', subject, 'alice')]);
    await emitter.emit([keyEvent('enabled', subject, 'bob')]);
    expect(linesOf(file).map((event) => [event['detail-type'], event.detail.actor])).toEqual([
      ['Key Created', 'alice'],
      ['Key Revoked', 'alice'],
      ['Key Enabled', 'bob'],
    ]);
    expect(errors).toEqual([]);
  });

  it('that cannot be written never rejects: each event is logged and handed back as unsent', async () => {
    const logged: Array<[string, Record<string, unknown>]> = [];
    const emitter = fileKeyEvents(join(tempFile(), 'no-such-dir', 'events.jsonl'), {
      error: (message, extra) => logged.push([message, extra]),
    });
    const event = keyEvent('updated', subject, 'alice');
    await expect(emitter.emit([event])).resolves.toEqual([event]);
    expect(logged).toEqual([[KEY_EVENT_NOT_SENT, expect.objectContaining({ key_event: event })]]);
  });
});

describe('EventBridge', () => {
  it('puts each event on the bus with source branch-api, its detail-type and its detail as JSON', async () => {
    const endpoint = await eventBridgeEndpoint((_call, entries) => ({
      status: 200,
      body: { FailedEntryCount: 0, Entries: entries.map((_, i) => ({ EventId: `e${i}` })) },
    }));
    try {
      const event = keyEvent('leaked', subject, 'github-secret-scanning', new Date(), { url: 'u', source: 'content' });
      await eventBridgeKeyEvents(endpoint.client, 'key-events', { error: () => undefined }).emit([event]);
      expect(endpoint.calls).toEqual([
        [
          expect.objectContaining({
            EventBusName: 'key-events',
            Source: 'branch-api',
            DetailType: 'Key Leaked',
            Detail: JSON.stringify(event.detail),
          }),
        ],
      ]);
    } finally {
      await endpoint.close();
    }
  });

  it('retries the entries it refused, then logs what is left for replay', async () => {
    // The stand-in fails the whole first call, then always refuses the Key Revoked entry.
    const endpoint = await eventBridgeEndpoint((call, entries) =>
      call === 1
        ? { status: 500, body: { __type: 'InternalException', message: 'boom' } }
        : {
            status: 200,
            body: {
              FailedEntryCount: 1,
              Entries: (entries as Array<{ DetailType: string }>).map((entry, i) =>
                entry.DetailType === 'Key Revoked' ? { ErrorCode: 'InternalFailure' } : { EventId: `e${i}` },
              ),
            },
          },
    );
    const logged: Array<Record<string, any>> = [];
    try {
      const first = keyEvent('created', subject, 'alice');
      const second = keyEvent('revoked', subject, 'alice');
      const unsent = await eventBridgeKeyEvents(endpoint.client, 'key-events', {
        error: (_m, extra) => logged.push(extra),
      }).emit([first, second]);
      // Call 1 fails whole; call 2 sends the first and refuses the second; call 3 refuses it again.
      expect(endpoint.calls.map((entries) => entries.map((entry) => entry.DetailType))).toEqual([
        ['Key Created', 'Key Revoked'],
        ['Key Created', 'Key Revoked'],
        ['Key Revoked'],
      ]);
      expect(endpoint.calls).toHaveLength(KEY_EVENT_ATTEMPTS);
      expect(logged.map((extra) => extra.key_event)).toEqual([second]);
      expect(unsent).toEqual([second]);
    } finally {
      await endpoint.close();
    }
  });
});

describe('once per period', () => {
  it('fires once per id per period, and holds at most its bound of ids', () => {
    const hour = 3_600_000;
    const once = new OncePerPeriod(hour, 3);
    expect([once.first('a', 0), once.first('a', hour - 1), once.first('a', hour)]).toEqual([true, false, true]);
    for (let i = 0; i < 1000; i += 1) once.first(`k${i}`, hour);
    expect(once.size).toBe(3);
  });
});

describe('key actions through the operator library (what the CLI and the console call)', () => {
  it('each send their event with the operator as actor: created, updated, disabled, enabled, rolled, revoked', async () => {
    await setUpBranches();
    const file = tempFile();
    const ctx = createOperatorContext({ ...process.env, KEY_EVENTS_FILE: file });
    try {
      const branchId = mainBranch.id;
      const { key, record } = await createOperatorKey(ctx, { branchId, scopes: ['read'], name: 'sync' });
      const ref = { branchId, keyId: record.key_id };
      await updateKey(ctx, { ...ref, name: 'sync v2' });
      await disableKey(ctx, ref);
      await disableKey(ctx, ref); // no change: no event
      await enableKey(ctx, ref);
      const rolled = await rollKey(ctx, { ...ref, graceMs: 0 });
      await revokeKey(ctx, { branchId, keyId: rolled.record.key_id });
      const events = linesOf(file);
      expect(events.map((event) => [event['detail-type'], event.detail.name])).toEqual([
        ['Key Created', 'sync'],
        ['Key Updated', 'sync v2'],
        ['Key Disabled', 'sync v2'],
        ['Key Enabled', 'sync v2'],
        ['Key Rolled', 'sync v2'],
        ['Key Created', 'sync v2'],
        ['Key Revoked', 'sync v2'],
      ]);
      expect(new Set(events.map((event) => event.detail.actor))).toEqual(new Set([await ctx.actor()]));
      expect(events[4]!.detail.rolled_to).toBe(rolled.record.key_id);
      expect(readFileSync(file, 'utf8')).not.toContain(key);
      expect(readFileSync(file, 'utf8')).not.toContain(rolled.key);
    } finally {
      ctx.close();
    }
  });
});

describe('rate limit reached', () => {
  const file = tempFile();

  beforeAll(async () => {
    await setUpBranches();
  });

  it('is sent once per key per hour by the container that refuses, not once per refusal', async () => {
    const container = await loadService({ KEY_EVENTS_FILE: file });
    const { key, record } = await createKey({ name: 'Busy', rateLimit: '2/h' });
    const call = () => invoke(container.getBranch, { path: '/v1/branch', key });
    for (const expected of [200, 200, 429, 429, 429]) expect((await call()).statusCode).toBe(expected);
    expectError(await call(), 429, 'rate_limited');
    const sent = linesOf(file).filter((event) => event.detail.key_id === record.key_id);
    expect(sent).toEqual([
      expect.objectContaining({
        'detail-type': 'Key Rate Limit Reached',
        detail: expect.objectContaining({
          key_id: record.key_id,
          name: 'Busy',
          actor: 'branch-api',
          rate_limit: '2/h',
        }),
      }),
    ]);
    expect(readFileSync(file, 'utf8')).not.toContain(key);
  });
});
