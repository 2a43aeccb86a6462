/**
 * The rollups aggregator's logic: a DynamoDB stream batch of the usage table in, the calls added
 * to their hour items exactly once (docs/decisions.md "Usage rollups"). The deployed function
 * (functions/aggregate-usage.ts) and the local change feed (lib/local/change-feed.ts) run this
 * same code on the same event shape.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { MetricUnit, type Metrics } from '@aws-lambda-powertools/metrics';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import * as z from 'zod/mini';
import type { RollupsRepository } from '../data/repositories/rollups';
import type { UsageRecord } from '../data/repositories/usage';

/**
 * A usage record as stored (and as logged when its write failed). zod/mini: the full zod would
 * more than double the aggregator's bundle (test/cdk/aggregator-bundle.test.ts).
 */
export const UsageRecordSchema = z.object({
  key_id: z.string().check(z.minLength(1)),
  branch_id: z.string().check(z.minLength(1)),
  method: z.string(),
  path: z.string(),
  route: z.string(),
  status: z.int().check(z.gte(100), z.lte(599)),
  response_time_ms: z.number().check(z.gte(0)),
  timestamp: z.iso.datetime(),
  request_id: z.string().check(z.minLength(1)),
}) satisfies z.ZodMiniType<UsageRecord>;

/** The aggregator function's entry, relative to the project root: what the CDK stack bundles and the local change feed invokes. */
export const AGGREGATOR_ENTRY = 'functions/aggregate-usage.ts';

export const ROLLUP_CALLS_METRIC = 'RollupCallsApplied';
export const ROLLUP_DUPLICATES_METRIC = 'RollupDuplicatesSkipped';
export const ROLLUP_UNREADABLE_METRIC = 'RollupRecordsUnreadable';

export interface UsageAggregatorOptions {
  rollups: Pick<RollupsRepository, 'apply'>;
  /** Days DynamoDB TTL keeps an hour item. */
  retentionDays: number;
  logger: Pick<Logger, 'info' | 'warn' | 'error'>;
  metrics: Pick<Metrics, 'addMetric'>;
}

/** The calls a stream batch carries: inserts and modifications (a replayed Put) of usage records. */
export const callsOf = (event: DynamoDBStreamEvent) => {
  const calls: UsageRecord[] = [];
  let unreadable = 0;
  for (const record of event.Records) {
    const image = record.dynamodb?.NewImage;
    if (record.eventName === 'REMOVE' || !image) continue; // TTL expiry does not undo a call
    const parsed = UsageRecordSchema.safeParse(unmarshall(image as Record<string, AttributeValue>));
    if (parsed.success) calls.push(parsed.data);
    else unreadable += 1;
  }
  return { calls, unreadable };
};

/**
 * The handler body. A failure reports the batch's first record as failed, so Lambda retries it
 * (split in two by bisectBatchOnError) and, past its retries, sends it to the dead-letter
 * queue; applying twice is harmless. A record that is not a usage record can never succeed: it
 * is logged and counted, not retried.
 */
export const createUsageAggregator =
  ({ rollups, retentionDays, logger, metrics }: UsageAggregatorOptions) =>
  async (event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> => {
    const { calls, unreadable } = callsOf(event);
    if (unreadable > 0) {
      logger.warn('Stream records that are not usage records were skipped', { unreadable });
      metrics.addMetric(ROLLUP_UNREADABLE_METRIC, MetricUnit.Count, unreadable);
    }
    try {
      const { applied, duplicates } = await rollups.apply(calls, retentionDays);
      metrics.addMetric(ROLLUP_CALLS_METRIC, MetricUnit.Count, applied);
      if (duplicates > 0) metrics.addMetric(ROLLUP_DUPLICATES_METRIC, MetricUnit.Count, duplicates);
      logger.info('Usage aggregated', { records: event.Records.length, applied, duplicates });
      return { batchItemFailures: [] };
    } catch (error) {
      logger.error('Usage aggregation failed; the batch will be retried', { error });
      const first = event.Records[0]?.dynamodb?.SequenceNumber;
      return { batchItemFailures: first ? [{ itemIdentifier: first }] : [] };
    }
  };
