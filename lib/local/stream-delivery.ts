/**
 * Delivery of the local change feed's records to the aggregator (docs/usage-rollups.md "The
 * pipeline"): only what the local stack needs of an event source mapping. Records go to shards by
 * partition key; each shard delivers in order, in batches, one batch at a time; after a failure
 * it retries from the first record not applied, and a record that fails `maxAttempts` deliveries
 * is set aside (the dead-letter store) so the records behind it keep flowing. Lambda's own rules
 * (bisecting, partial batch responses) are tested on the aggregator (test/rollups.test.ts).
 */
import { createHash } from 'node:crypto';
import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { streamEvent, type StreamChange } from './stream-events';

export interface DeliveryOptions {
  tableArn: string;
  handler: (event: DynamoDBStreamEvent) => Promise<DynamoDBBatchResponse | void>;
  /** @default 4 */
  shards?: number;
  /** @default 100 */
  batchSize?: number;
  /**
   * How long a shard gathers records before it delivers them. The aggregator writes a few items
   * per batch, not per call, so a longer window costs fewer writes and a later rollup. @default 1000
   */
  batchWindowMs?: number;
  /** Wait before the first redelivery; doubled for each further one, at most 2 s. @default 100 */
  retryDelayMs?: number;
  /** Deliveries of a record before it is set aside. @default 5 */
  maxAttempts?: number;
  /** Records held before `room()` makes writers wait for deliveries. @default MAX_PENDING */
  maxPending?: number;
  setAside: (change: StreamChange, reason: string) => Promise<void>;
  onError: (error: unknown) => void;
  /**
   * True while the store the handler writes to can't serve (lib/local/disk-store.ts): a delivery
   * that fails then says nothing about its records and does not count. @default never
   */
  storeDown?: () => boolean;
}

export interface DeliveryStats {
  delivered: number;
  setAside: number;
  /** Records queued, neither delivered nor set aside yet. */
  pending: number;
}

/** The records a feed holds before its writers wait: under a minute of the local stack's busiest traffic. */
export const MAX_PENDING = 10_000;

/** The shard a partition key value's records go to (as DynamoDB's stream keeps a key in one shard). */
export const shardOf = (partitionKey: string, shards: number): number =>
  createHash('sha1').update(partitionKey).digest().readUInt32BE(0) % shards;

export const DEFAULT_SHARDS = 4;

interface Shard {
  queue: StreamChange[];
  delivering?: boolean;
  timer?: NodeJS.Timeout;
  /** Failed deliveries of the record at the head of the queue. */
  attempts: number;
}

export class ShardedDelivery {
  private readonly shards: Shard[];
  private readonly batchSize: number;
  private readonly batchWindowMs: number;
  private readonly retryDelayMs: number;
  private readonly maxAttempts: number;
  private readonly maxPending: number;
  private readonly counts: DeliveryStats = { delivered: 0, setAside: 0, pending: 0 };
  /** Records that could not be set aside either (they stay queued): said once each. */
  private readonly unkept = new WeakSet<StreamChange>();
  private closed = false;
  private readonly idle: (() => void)[] = [];
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly options: DeliveryOptions) {
    this.batchSize = options.batchSize ?? 100;
    this.batchWindowMs = options.batchWindowMs ?? 1000;
    this.retryDelayMs = options.retryDelayMs ?? 100;
    this.maxAttempts = options.maxAttempts ?? 5;
    this.maxPending = options.maxPending ?? MAX_PENDING;
    this.shards = Array.from({ length: options.shards ?? DEFAULT_SHARDS }, () => ({ queue: [], attempts: 0 }));
  }

  /** Queues a numbered change on its partition key's shard. */
  push(change: StreamChange, partitionKey: string): void {
    const shard = this.shards[shardOf(partitionKey, this.shards.length)]!;
    shard.queue.push(change);
    this.counts.pending += 1;
    this.schedule(shard);
  }

  /** Resolves once the records held are at most `maxPending`: a writer waits here before its answer. */
  room(): Promise<void> {
    if (this.counts.pending <= this.maxPending || this.closed) return Promise.resolve();
    return new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  /** Delivers what is queued without waiting out the window; resolves once it is delivered or set aside. */
  drain(): Promise<void> {
    if (!this.busy()) return Promise.resolve();
    const drained = new Promise<void>((resolve) => this.idle.push(resolve));
    for (const shard of this.shards) {
      if (!shard.timer) continue;
      clearTimeout(shard.timer);
      shard.timer = undefined;
      this.schedule(shard);
    }
    return drained;
  }

  /** The changes still to deliver, those being delivered included. */
  pending(): StreamChange[] {
    return this.shards.flatMap((shard) => shard.queue);
  }

  stats(): DeliveryStats {
    return { ...this.counts };
  }

  close(): void {
    this.closed = true;
    for (const shard of this.shards) clearTimeout(shard.timer);
    for (const resolve of [...this.idle.splice(0), ...this.waiting.splice(0)]) resolve();
  }

  private released(count: number): void {
    this.counts.pending -= count;
    while (this.waiting.length > 0 && this.counts.pending <= this.maxPending) this.waiting.shift()!();
  }

  private busy(): boolean {
    return this.shards.some((s) => s.queue.length > 0 || s.delivering);
  }

  private schedule(shard: Shard): void {
    if (shard.timer || shard.delivering || this.closed) return;
    shard.timer = setTimeout(
      () => {
        shard.timer = undefined;
        void this.pump(shard);
      },
      this.goesAtOnce(shard) ? 0 : this.batchWindowMs,
    );
  }

  /** A full batch, or one a drain waits for, goes without waiting out the window. */
  private goesAtOnce(shard: Shard): boolean {
    return shard.queue.length >= this.batchSize || this.idle.length > 0;
  }

  /** Delivers one batch; returns how many records from its head were applied. */
  private async deliverOnce(batch: StreamChange[]): Promise<number> {
    try {
      const failed = (await this.options.handler(streamEvent(batch, this.options.tableArn)))?.batchItemFailures[0]
        ?.itemIdentifier;
      if (failed === undefined) return batch.length;
      return Math.max(
        0,
        batch.findIndex((change) => change.sequenceNumber === failed),
      );
    } catch (error) {
      this.options.onError(error);
      return 0;
    }
  }

  /**
   * After a failed delivery: set the head aside once it has failed often enough, else wait to
   * retry. A head that can't be set aside either (the store itself is down) stays first and starts
   * its attempts again: a record leaves the queue delivered or set aside, never lost.
   */
  private async afterFailure(shard: Shard): Promise<void> {
    const down = this.options.storeDown?.() ?? false;
    if (!down) shard.attempts += 1;
    if (shard.attempts >= this.maxAttempts) {
      const head = shard.queue[0]!;
      shard.attempts = 0;
      try {
        // Still pending while it is set aside: a crash meanwhile leaves its hour marked for a recount.
        await this.options.setAside(head, `failed ${this.maxAttempts} deliveries`);
        shard.queue.shift();
        this.counts.setAside += 1;
        this.released(1);
        return;
      } catch (error) {
        if (!this.unkept.has(head)) this.options.onError(error);
        this.unkept.add(head);
      }
    }
    const doublings = down ? this.maxAttempts : Math.max(0, shard.attempts - 1);
    const delay = Math.min(2000, this.retryDelayMs * 2 ** doublings);
    await new Promise((resolve) => setTimeout(resolve, delay));
  }

  private async pump(shard: Shard): Promise<void> {
    shard.delivering = true;
    try {
      // As an event source mapping: one batch per window, unless full; a failed one is retried.
      let more = shard.queue.length > 0 && !this.closed;
      while (more) {
        const batch = shard.queue.slice(0, this.batchSize);
        const applied = await this.deliverOnce(batch);
        if (applied > 0) {
          shard.queue.splice(0, applied);
          this.counts.delivered += applied;
          this.released(applied);
          shard.attempts = 0;
        }
        if (applied < batch.length) await this.afterFailure(shard);
        more = shard.queue.length > 0 && !this.closed && (shard.attempts > 0 || this.goesAtOnce(shard));
      }
    } finally {
      shard.delivering = false;
    }
    if (shard.queue.length > 0) this.schedule(shard);
    else if (!this.busy()) for (const resolve of this.idle.splice(0)) resolve();
  }
}
