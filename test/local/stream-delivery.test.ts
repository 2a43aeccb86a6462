/**
 * The local feed's delivery holds a bounded number of records however far its writers get ahead
 * of the aggregator: past `maxPending` a writer waits, and every record is still delivered once,
 * in order. Counted, with the aggregator held by the test, not timed.
 */
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { ShardedDelivery } from '../../lib/local/stream-delivery';

const MAX_PENDING = 10;
const WRITES = 250;

it(`holds at most ${MAX_PENDING} records, plus the one of a waiting writer, past ${WRITES} writes`, async () => {
  const delivered: string[] = [];
  let release: () => void = () => undefined;
  let held: Promise<void> = new Promise((resolve) => (release = resolve));
  const delivery = new ShardedDelivery({
    tableArn: 'arn:aws:dynamodb:local:000000000000:table/bound',
    shards: 1,
    batchSize: 4,
    batchWindowMs: 0,
    maxPending: MAX_PENDING,
    // The aggregator, held until the test lets one batch through.
    handler: async (event: DynamoDBStreamEvent) => {
      await held;
      held = new Promise((resolve) => (release = resolve));
      delivered.push(...event.Records.map((record) => record.dynamodb!.SequenceNumber!));
    },
    setAside: async () => undefined,
    onError: (error) => {
      throw error;
    },
  });
  const keys = marshall({ pk: 'p', sk: 's' });
  let mostHeld = 0;
  let waits = 0;
  // One writer, as a connection writes: it queues its record, then waits for room before its answer.
  const writer = (async () => {
    for (let i = 0; i < WRITES; i += 1) {
      delivery.push({ eventName: 'INSERT', keys, sequenceNumber: String(i) }, 'p');
      mostHeld = Math.max(mostHeld, delivery.stats().pending);
      let waited = true;
      const room = delivery.room().then(() => (waited = false));
      await Promise.resolve();
      if (waited) waits += 1;
      await room;
    }
  })();
  // Let the aggregator take one batch at a time until the writer is done.
  let done = false;
  void writer.then(() => (done = true));
  while (!done) {
    release();
    await new Promise((resolve) => setImmediate(resolve));
  }
  const drained = delivery.drain();
  while (delivery.stats().pending > 0) {
    release();
    await new Promise((resolve) => setImmediate(resolve));
  }
  await drained;

  expect(mostHeld).toBe(MAX_PENDING + 1);
  expect(waits).toBeGreaterThan(0);
  expect(delivery.stats()).toEqual({ delivered: WRITES, setAside: 0, pending: 0 });
  expect(delivered).toEqual(Array.from({ length: WRITES }, (_, i) => String(i)));
  delivery.close();
});
