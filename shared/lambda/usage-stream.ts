/**
 * The rollups aggregator's logic (docs/decisions.md "Usage rollups"): a stream batch of the usage
 * table in, its calls added to their hour items exactly once. The deployed function and the local
 * change feed run this same code on the same event shape.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { MetricUnit, type Metrics } from '@aws-lambda-powertools/metrics';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import type { ApplyResult, RollupsRepository } from '../data/repositories/rollups';
import { usageTable } from '../data/tables';
import { padSequence, streamTag, type StreamCall } from '../domain/rollups';
import { UsageRecordSchema } from '../domain/usage-record-schema';
import { ROLLUP_UNREADABLE_METRIC } from '../domain/telemetry';

/** The aggregator function's entry, relative to the project root: what the CDK stack bundles and the local change feed invokes. */
export const AGGREGATOR_ENTRY = 'functions/aggregate-usage.ts';

export const ROLLUP_DUPLICATES_METRIC = 'RollupDuplicatesSkipped';
export const ROLLUP_FAILED_METRIC = 'RollupRecordsFailed';

export interface UsageAggregatorOptions {
  rollups: Pick<RollupsRepository, 'apply' | 'recordProgress'>;
  /** Days DynamoDB TTL keeps an hour item. */
  retentionDays: number;
  logger: Pick<Logger, 'info' | 'warn' | 'error'>;
  metrics: Pick<Metrics, 'addMetric'>;
}

type Image = Record<string, AttributeValue>;

/** A stream call in its batch: where it is (for the partial-batch response) and what it adds. */
interface IndexedCall extends StreamCall {
  index: number;
  /** The record's own SequenceNumber, as Lambda expects it back. */
  itemIdentifier: string;
}

/**
 * The calls a batch carries: inserted usage records, each with its source and padded sequence.
 * Removals (TTL) and modifications are not calls; a record that is no usage record or has no
 * sequence can never be applied, so it is counted as unreadable.
 */
export const callsOf = (event: DynamoDBStreamEvent) => {
  const calls: IndexedCall[] = [];
  let unreadable = 0;
  event.Records.forEach((record, index) => {
    const image = record.dynamodb?.NewImage as Image | undefined;
    if (record.eventName !== 'INSERT' || !image) return;
    const parsed = UsageRecordSchema.safeParse(unmarshall(image));
    const sequence = padSequence(record.dynamodb?.SequenceNumber);
    const partition = (record.dynamodb?.Keys as Image | undefined)?.[usageTable.partitionKey.name];
    const partitionValue = partition?.S ?? partition?.N;
    if (!parsed.success || !sequence || partitionValue === undefined) {
      unreadable += 1;
      return;
    }
    const source = `${streamTag(record.eventSourceARN ?? '')}|${partitionValue}`;
    calls.push({ record: parsed.data, source, sequence, index, itemIdentifier: record.dynamodb!.SequenceNumber! });
  });
  return { calls, unreadable };
};

/**
 * The handler body. A partial failure reports the first failed record, so Lambda retries from
 * there; calls applied after it are at or below their watermark when redelivered and add nothing.
 * The newest call time before that failure is kept as the rollups' "as of".
 */
export const createUsageAggregator =
  ({ rollups, retentionDays, logger, metrics }: UsageAggregatorOptions) =>
  async (event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> => {
    const { calls, unreadable } = callsOf(event);
    if (unreadable > 0) {
      logger.warn('Stream records that are not usage records were skipped', { unreadable });
      metrics.addMetric(ROLLUP_UNREADABLE_METRIC, MetricUnit.Count, unreadable);
    }
    let result: ApplyResult;
    try {
      result = await rollups.apply(calls, retentionDays);
    } catch (error) {
      // Not a per-item failure (apply reports those): retry the whole batch.
      logger.error('Usage aggregation failed; the batch will be retried', { error });
      const first = event.Records[0]?.dynamodb?.SequenceNumber;
      return { batchItemFailures: first ? [{ itemIdentifier: first }] : [] };
    }
    const { applied, duplicates, failed } = result;
    if (duplicates > 0) metrics.addMetric(ROLLUP_DUPLICATES_METRIC, MetricUnit.Count, duplicates);
    const firstFailed = failed.length
      ? (failed.map((f) => f.call as IndexedCall).reduce((a, b) => (b.index < a.index ? b : a)) as IndexedCall)
      : undefined;
    if (firstFailed) {
      metrics.addMetric(ROLLUP_FAILED_METRIC, MetricUnit.Count, failed.length);
      logger.error('Usage records could not be aggregated; Lambda retries from the first', {
        failed: failed.length,
        first_sequence: firstFailed.itemIdentifier,
        error: failed[0]!.error,
      });
    }
    const done = calls.filter((call) => firstFailed === undefined || call.index < firstFailed.index);
    const asOf = done
      .map(({ record }) => record.timestamp)
      .sort()
      .at(-1);
    if (asOf) {
      // Freshness only: a failure here must not make Lambda redeliver calls already counted.
      await rollups.recordProgress(asOf).catch((error: unknown) => logger.warn('Progress not recorded', { error }));
    }
    logger.info('Usage aggregated', { records: event.Records.length, applied, duplicates, failed: failed.length });
    return { batchItemFailures: firstFailed ? [{ itemIdentifier: firstFailed.itemIdentifier }] : [] };
  };
