/**
 * The local feed's delivery keeps its own bookkeeping bounded in a long session: past
 * MAX_LAGS_KEPT delivered records it keeps that many lag samples, the newest, and every record
 * is still delivered and counted.
 */
import { marshall } from '@aws-sdk/util-dynamodb';
import { MAX_LAGS_KEPT, ShardedDelivery } from '../../lib/local/stream-delivery';

it(`keeps at most ${MAX_LAGS_KEPT} lag samples, the newest, while delivering every record past them`, async () => {
  const total = MAX_LAGS_KEPT + 2_500;
  let handled = 0;
  const delivery = new ShardedDelivery({
    tableArn: 'arn:aws:dynamodb:local:000000000000:table/bound',
    shards: 1,
    batchSize: 5_000,
    batchWindowMs: 0,
    handler: async (event) => {
      handled += event.Records.length;
    },
    setAside: async () => undefined,
    onError: (error) => {
      throw error;
    },
  });
  const keys = marshall({ pk: 'p', sk: 's' });
  for (let i = 0; i < MAX_LAGS_KEPT; i += 1)
    delivery.push({ eventName: 'INSERT', keys, sequenceNumber: String(i) }, 'p');
  await delivery.drain();
  expect(delivery.stats().lagsMs).toHaveLength(MAX_LAGS_KEPT);
  // Past the bound: the oldest samples give way, the count stays.
  const before = delivery.stats().lagsMs;
  for (let i = MAX_LAGS_KEPT; i < total; i += 1)
    delivery.push({ eventName: 'INSERT', keys, sequenceNumber: String(i) }, 'p');
  await delivery.drain();
  const { delivered, lagsMs } = delivery.stats();
  expect([delivered, handled, lagsMs.length]).toEqual([total, total, MAX_LAGS_KEPT]);
  const replaced = lagsMs.filter((lag, i) => lag !== before[i]).length;
  expect(replaced).toBeGreaterThan(0);
  expect(replaced).toBeLessThanOrEqual(total - MAX_LAGS_KEPT);
  delivery.close();
});
