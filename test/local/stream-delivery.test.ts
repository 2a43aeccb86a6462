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

describe('a store that stops serving for a while', () => {
  const keys = marshall({ pk: 'p', sk: 's' });
  /** A delivery whose aggregator fails `failures` times, then applies; counted, not timed. */
  const deliveryThat = (failures: number, options: { storeDown?: () => boolean; setAsideFails?: number }) => {
    let left = failures;
    let setAsideFails = options.setAsideFails ?? 0;
    const setAside: string[] = [];
    const errors: unknown[] = [];
    const delivery = new ShardedDelivery({
      tableArn: 'arn:aws:dynamodb:local:000000000000:table/outage',
      shards: 1,
      batchWindowMs: 0,
      retryDelayMs: 1,
      maxAttempts: 3,
      handler: async (event) => {
        if (left-- > 0) return { batchItemFailures: [{ itemIdentifier: event.Records[0]!.dynamodb!.SequenceNumber! }] };
      },
      setAside: async (change) => {
        if (setAsideFails-- > 0) throw new Error('the store is down');
        setAside.push(change.sequenceNumber);
      },
      onError: (error) => errors.push(error),
      ...(options.storeDown ? { storeDown: options.storeDown } : {}),
    });
    delivery.push({ eventName: 'INSERT', keys, sequenceNumber: '1' }, 'p');
    return { delivery, setAside, errors };
  };

  it('does not count the deliveries that failed while it was down: the record is delivered, not set aside', async () => {
    let down = true;
    let checks = 0;
    // Down for the first four failed deliveries: more than the record's three attempts.
    const { delivery, setAside } = deliveryThat(5, { storeDown: () => (down = ++checks <= 4) });
    await delivery.drain();
    expect([down, setAside, delivery.stats()]).toEqual([false, [], { delivered: 1, setAside: 0, pending: 0 }]);
    delivery.close();
  });

  it('keeps a record it could not set aside either (the store is down), says so once, and delivers it later', async () => {
    const { delivery, setAside, errors } = deliveryThat(5, { setAsideFails: 1 });
    await delivery.drain();
    expect([setAside, errors.length, delivery.stats()]).toEqual([[], 1, { delivered: 1, setAside: 0, pending: 0 }]);
    delivery.close();
  });

  it('sets aside a record that fails its attempts while the store serves', async () => {
    const { delivery, setAside } = deliveryThat(1_000, { storeDown: () => false });
    await delivery.drain();
    expect([setAside, delivery.stats()]).toEqual([['1'], { delivered: 0, setAside: 1, pending: 0 }]);
    delivery.close();
  });
});
