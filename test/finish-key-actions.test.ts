/**
 * The deployed path of key events at least once (docs/decisions.md "Key events"): the function on
 * the keys table's stream finishes an entry a crashed function left pending. Stream batches are
 * built from the key items as stored (the NEW_IMAGE DynamoDB records), the function is the real
 * one, and its events go to a stand-in EventBridge endpoint through the real SDK client.
 */
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { buildContext } from '../lib/local/events';
import { invokeFunction } from '../lib/local/invoke';
import { sequenceNumber, streamEvent, type StreamChange } from '../lib/local/stream-events';
import { eventBridgeKeyEvents } from '../shared/data/key-events';
import { ActivityRepository, KeyOutbox, KeysRepository } from '../shared/data/repositories';
import { eventBridgeEndpoint } from './support/event-bridge';
import { mainBranch } from './support/fixtures';
import { createKey, fixtureClient, fixtureKeys, scanRaw, setUpBranches, tableNames } from './support/harness';

type Handler = (event: DynamoDBStreamEvent, context: ReturnType<typeof buildContext>) => Promise<DynamoDBBatchResponse>;

const branchId = mainBranch.id;
/** Event ids the stand-in bus refuses (an entry error, as PutEvents reports one). */
const refused = new Set<string>();
let bus: Awaited<ReturnType<typeof eventBridgeEndpoint>>;
let handler: Handler;
const savedEnv = { ...process.env };
let sequence = 0;

const eventIdOf = (entry: Record<string, any>): string => JSON.parse(entry.Detail).event_id;
/** The id of every event the bus accepted, in order. */
const acceptedIds: string[] = [];

beforeAll(async () => {
  await setUpBranches();
  bus = await eventBridgeEndpoint((_call, entries) => ({
    status: 200,
    body: {
      FailedEntryCount: 0,
      Entries: (entries as Record<string, any>[]).map((entry, i) => {
        if (refused.has(eventIdOf(entry))) return { ErrorCode: 'InternalFailure' };
        acceptedIds.push(eventIdOf(entry));
        return { EventId: `e${i}` };
      }),
    },
  }));
  Object.assign(process.env, {
    KEY_EVENT_BUS_NAME: 'branch-api-key-events',
    AWS_ENDPOINT_URL_EVENTBRIDGE: bus.endpoint,
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
  });
  await jest.isolateModulesAsync(async () => {
    handler = (await import('../functions/finish-key-actions')).handler as unknown as Handler;
  });
});
afterAll(async () => {
  process.env = savedEnv;
  await bus.close();
});

/** A key whose disabling was written by a function that then died: the entry neither copied nor sent. */
const keyLeftPending = async (name: string): Promise<string> => {
  const { record } = await createKey({ name });
  const crashed = new KeysRepository(fixtureClient, tableNames.keys); // no activity table, no events
  await crashed.disable({ branchId, keyId: record.key_id, actor: 'alice' });
  return record.key_id;
};

/** The stream record of each key item as it is stored now. */
const batchOf = async (keyIds: readonly string[]): Promise<DynamoDBStreamEvent> => {
  const items = await scanRaw(tableNames.keys);
  const changes = keyIds.map((keyId): StreamChange => {
    const item = items.find((stored) => stored.key_id?.S === keyId)!;
    return {
      eventName: 'MODIFY',
      keys: { key_hash: item.key_hash! },
      newImage: item,
      sequenceNumber: sequenceNumber((sequence += 1)),
    };
  });
  return streamEvent(changes, 'arn:aws:dynamodb:local:000000000000:table/keys');
};
const run = (event: DynamoDBStreamEvent) => invokeFunction(handler, event, buildContext('finish-key-actions'));
const pending = async (keyId: string) =>
  (await scanRaw(tableNames.keys)).some((item) => item.key_id?.S === keyId && item.outbox?.L?.length);
const logged = async (keyId: string) =>
  (await scanRaw(tableNames.activity)).filter((item) => item.key_id?.S === keyId).map((item) => item.action!.S);

it('finishes a pending entry: copied to the activity table, sent once, cleared; a batch seen again sends nothing', async () => {
  const keyId = await keyLeftPending('crashed');
  const batch = await batchOf([keyId]);
  expect(await run(batch)).toEqual({ batchItemFailures: [] });
  expect(acceptedIds.filter((id) => id.startsWith(keyId))).toEqual([`${keyId}#2`]);
  expect(bus.calls.flat().find((entry) => eventIdOf(entry) === `${keyId}#2`)).toMatchObject({
    EventBusName: 'branch-api-key-events',
    Source: 'branch-api',
    DetailType: 'Key Disabled',
  });
  expect((await logged(keyId)).sort()).toEqual(['created', 'disabled']);
  expect(await pending(keyId)).toBe(false);

  // Redelivered (Lambda retries, or the record of the clearing): finished already, nothing sent again.
  const callsBefore = bus.calls.length;
  expect(await run(batch)).toEqual({ batchItemFailures: [] });
  expect(bus.calls).toHaveLength(callsBefore);
});

it('answers the first record it could not finish as the batch item failure; a retry from it finishes the rest', async () => {
  const keyIds = [await keyLeftPending('first'), await keyLeftPending('refused'), await keyLeftPending('after')];
  const batch = await batchOf(keyIds);
  refused.add(`${keyIds[1]}#2`);
  const failedAt = batch.Records[1]!.dynamodb!.SequenceNumber!;
  expect(await run(batch)).toEqual({ batchItemFailures: [{ itemIdentifier: failedAt }] });
  expect([await pending(keyIds[0]!), await pending(keyIds[1]!), await pending(keyIds[2]!)]).toEqual([
    false,
    true,
    true,
  ]);

  refused.clear();
  const retry: DynamoDBStreamEvent = { Records: batch.Records.slice(1) };
  expect(await run(retry)).toEqual({ batchItemFailures: [] });
  for (const keyId of keyIds) {
    expect(await pending(keyId)).toBe(false);
    expect((await logged(keyId)).sort()).toEqual(['created', 'disabled']);
  }
  const sent = acceptedIds.filter((id) => keyIds.some((keyId) => id.startsWith(`${keyId}#`)));
  expect(sent.sort()).toEqual(keyIds.map((keyId) => `${keyId}#2`).sort());
});

it('skips a record whose key is gone', async () => {
  const event = streamEvent(
    [{ eventName: 'MODIFY', keys: marshall({ key_hash: 'gone' }), sequenceNumber: sequenceNumber((sequence += 1)) }],
    'arn:aws:dynamodb:local:000000000000:table/keys',
  );
  expect(await run(event)).toEqual({ batchItemFailures: [] });
});

it('racing the actor, it sends every event in order of first arrival, each under its entry id; nothing is left', async () => {
  const { record } = await createKey({ name: 'raced' });
  const keyId = record.key_id;
  const crashed = new KeysRepository(fixtureClient, tableNames.keys); // no activity table, no events
  const ref = { branchId, keyId, actor: 'alice' };
  for (const act of [crashed.disable, crashed.enable, crashed.disable, crashed.enable]) await act.call(crashed, ref);
  expect((await fixtureKeys.getById(keyId))?.version).toBe(5);
  // The actor's own finishing pass and the stream's, at once, over the same four entries.
  const actor = new KeyOutbox(
    fixtureClient,
    tableNames.keys,
    new ActivityRepository(fixtureClient, tableNames.activity),
    eventBridgeKeyEvents(bus.client, 'branch-api-key-events', { error: () => undefined }),
  );
  const [, streamAnswer] = await Promise.all([
    actor.finishKey((await scanRaw(tableNames.keys)).find((item) => item.key_id?.S === keyId)!.key_hash!.S!),
    run(await batchOf([keyId])),
  ]);
  expect(streamAnswer).toEqual({ batchItemFailures: [] });
  // Either may send an event the other sent too; consumers dedupe by id, and the first arrivals are in order.
  const firstArrivals = [...new Set(acceptedIds.filter((id) => id.startsWith(`${keyId}#`)))];
  expect(firstArrivals).toEqual([2, 3, 4, 5].map((version) => `${keyId}#${version}`));
  expect(await pending(keyId)).toBe(false);
  expect((await logged(keyId)).sort()).toEqual(['created', 'disabled', 'disabled', 'enabled', 'enabled']);
});
