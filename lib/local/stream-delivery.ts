/**
 * Delivery of the local change feed's records, as the deployed event source mapping delivers a
 * DynamoDB stream (docs/usage-rollups.md "Locally"): records go to shards by partition key, each
 * shard numbers its records and delivers them in order, in batches, one batch at a time; a
 * partial-batch failure is retried from the first failed record, a failed batch is bisected,
 * and a record that still fails after `maxAttempts` deliveries alone is set aside (the
 * dead-letter store) so the records behind it keep flowing. Shards are independent: a record
 * being retried holds back only its own shard.
 */
import { createHash } from 'node:crypto';
import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { sequenceNumber, streamEvent, type StreamChange } from './stream-events';

export interface DeliveryOptions {
  tableArn: string;
  handler: (event: DynamoDBStreamEvent) => Promise<DynamoDBBatchResponse | void>;
  /** @default 4 */
  shards?: number;
  /** @default 100 */
  batchSize?: number;
  /** @default 200 */
  batchWindowMs?: number;
  /** Wait before the first redelivery; doubled for each further one, at most 2 s. @default 100 */
  retryDelayMs?: number;
  /** Deliveries of a record alone before it is set aside. @default 3 */
  maxAttempts?: number;
  setAside: (change: StreamChange, reason: string) => Promise<void>;
  onError: (error: unknown) => void;
}

export interface DeliveryStats {
  delivered: number;
  setAside: number;
  /** Per delivered record: from the write's answer to its batch's success (the newest MAX_LAGS_KEPT). */
  lagsMs: number[];
}

type Entry = { change: StreamChange; observedAt: number };

const MAX_LAGS_KEPT = 100_000;

/** The shard a partition key value's records go to (as DynamoDB's stream keeps a key in one shard). */
export const shardOf = (partitionKey: string, shards: number): number =>
  createHash('sha1').update(partitionKey).digest().readUInt32BE(0) % shards;

export const DEFAULT_SHARDS = 4;

export const createDelivery = (options: DeliveryOptions) => {
  const shardCount = options.shards ?? DEFAULT_SHARDS;
  const batchSize = options.batchSize ?? 100;
  const batchWindowMs = options.batchWindowMs ?? 200;
  const retryDelayMs = options.retryDelayMs ?? 100;
  const maxAttempts = options.maxAttempts ?? 3;
  const stats: DeliveryStats = { delivered: 0, setAside: 0, lagsMs: [] };
  let closed = false;
  let idle: (() => void)[] = [];

  const shards = Array.from({ length: shardCount }, () => ({
    queue: [] as Entry[],
    sequence: 0,
    delivering: false,
    timer: undefined as NodeJS.Timeout | undefined,
    /** Records per delivery: halved by each failed batch (bisecting), back to batchSize on success. */
    limit: batchSize,
    attempts: 0,
  }));
  type Shard = (typeof shards)[number];

  const busy = () => shards.some((s) => s.queue.length > 0 || s.delivering);
  const settle = () => {
    if (busy()) return;
    for (const resolve of idle) resolve();
    idle = [];
  };

  const schedule = (shard: Shard, delayMs = batchWindowMs) => {
    if (shard.timer || shard.delivering || closed) return;
    shard.timer = setTimeout(
      () => {
        shard.timer = undefined;
        void pump(shard);
      },
      shard.queue.length >= batchSize ? 0 : delayMs,
    );
  };

  /** Delivers one batch; returns how many records from its head are done (delivered). */
  const deliverOnce = async (shard: Shard, batch: Entry[]): Promise<number> => {
    try {
      const response = await options.handler(
        streamEvent(
          batch.map((e) => e.change),
          options.tableArn,
        ),
      );
      const failed = response?.batchItemFailures[0]?.itemIdentifier;
      if (failed === undefined) return batch.length;
      const index = batch.findIndex((e) => e.change.sequenceNumber === failed);
      // As Lambda does: checkpoint before the failed record, retry from it (alone: it is the culprit).
      if (index >= 0) shard.limit = 1;
      return Math.max(0, index);
    } catch (error) {
      options.onError(error);
      return 0;
    }
  };

  const done = (shard: Shard, count: number) => {
    const now = performance.now();
    for (const entry of shard.queue.splice(0, count)) stats.lagsMs.push(now - entry.observedAt);
    if (stats.lagsMs.length > MAX_LAGS_KEPT) stats.lagsMs.splice(0, stats.lagsMs.length - MAX_LAGS_KEPT);
    stats.delivered += count;
  };

  const pump = async (shard: Shard) => {
    shard.delivering = true;
    try {
      while (shard.queue.length > 0 && !closed) {
        const batch = shard.queue.slice(0, shard.limit);
        const delivered = await deliverOnce(shard, batch);
        if (delivered > 0) done(shard, delivered);
        if (delivered === batch.length) {
          shard.limit = batchSize;
          shard.attempts = 0;
          continue;
        }
        if (delivered > 0) shard.attempts = 0;
        shard.attempts += 1;
        if (shard.limit === 1 && shard.attempts >= maxAttempts) {
          const [head] = shard.queue.splice(0, 1);
          shard.attempts = 0;
          shard.limit = batchSize;
          stats.setAside += 1;
          await options
            .setAside(head!.change, `failed ${maxAttempts} deliveries`)
            .catch((error: unknown) => options.onError(error));
          continue;
        }
        if (delivered === 0) shard.limit = Math.max(1, Math.ceil(shard.limit / 2));
        await new Promise((resolve) => setTimeout(resolve, Math.min(2000, retryDelayMs * 2 ** (shard.attempts - 1))));
      }
    } finally {
      shard.delivering = false;
    }
    if (shard.queue.length > 0) schedule(shard);
    else settle();
  };

  return {
    /** Queues a change on its partition key's shard, numbered in that shard's order. */
    push(change: Omit<StreamChange, 'sequenceNumber'>, partitionKey: string) {
      const index = shardOf(partitionKey, shardCount);
      const shard = shards[index]!;
      shard.sequence += 1;
      // Unique across shards too (as DynamoDB's are): the shard's number in the lowest digits.
      const sequence = sequenceNumber(shard.sequence * shardCount + index);
      shard.queue.push({ change: { ...change, sequenceNumber: sequence }, observedAt: performance.now() });
      schedule(shard);
    },
    drain: (): Promise<void> => (busy() ? new Promise<void>((resolve) => idle.push(resolve)) : Promise.resolve()),
    stats: (): DeliveryStats => ({ ...stats, lagsMs: [...stats.lagsMs] }),
    close() {
      closed = true;
      for (const shard of shards) if (shard.timer) clearTimeout(shard.timer);
      for (const resolve of idle) resolve();
      idle = [];
    },
  };
};
