import type { Logger } from '@aws-lambda-powertools/logger';
import { MetricUnit, type Metrics } from '@aws-lambda-powertools/metrics';
import { redactApiKeys } from '../../domain/api-key';
import { USAGE_WRITE_FAILED_METRIC } from '../../domain/telemetry';
import { DEFAULT_USAGE_RETENTION_DAYS, responseTimeMs } from '../../domain/usage-record';
import type { UsageRecord } from '../../domain/usage-record';
import type { UsageRecorder } from '../../data/repositories/usage';
import type { ApiMiddleware, ApiRequest } from './types';

export interface RecordUsageOptions {
  usage: Pick<UsageRecorder, 'put'>;
  logger: Pick<Logger, 'debug' | 'info' | 'error'>;
  /** Published after the request by the chain (logMetrics). */
  metrics: Pick<Metrics, 'addMetric'>;
  /** Days before DynamoDB TTL removes a record. @default DEFAULT_USAGE_RETENTION_DAYS */
  retentionDays?: number;
}

const defaults = { retentionDays: DEFAULT_USAGE_RETENTION_DAYS };

/**
 * One usage record per call with a known key, written once the response is final. A write that
 * fails after the SDK's retries leaves the response as it is and logs the whole record (to be
 * replayed) with a metric; a call without a known key goes to the log only.
 */
export const recordUsage = (opts: RecordUsageOptions): ApiMiddleware => {
  const { usage, logger, metrics, retentionDays } = { ...defaults, ...opts };

  const record = async ({ event, context, response }: ApiRequest): Promise<void> => {
    const status = response?.statusCode ?? 500;
    const { apiKey } = context;
    const method = event.requestContext.http.method;
    const sourceIp = event.requestContext.http.sourceIp;
    // As requested, but never with a key in it (one pasted into the URL by mistake).
    const path = redactApiKeys(event.rawPath);
    if (!apiKey) {
      logger.info('Call without a known key', { method, path, status });
      return;
    }
    const record: UsageRecord = {
      key_id: apiKey.key_id,
      branch_id: apiKey.branch_id,
      method,
      path,
      route: context.route,
      status,
      response_time_ms: responseTimeMs(context.startedAt),
      timestamp: context.receivedAt.toISOString(),
      request_id: context.requestId,
      ...(sourceIp ? { source_ip: sourceIp } : {}),
    };
    try {
      await usage.put(record, retentionDays);
    } catch (error) {
      logger.error('Usage record not stored', { usage_record: record, error });
      metrics.addMetric(USAGE_WRITE_FAILED_METRIC, MetricUnit.Count, 1);
      return;
    }
    logger.debug('Usage recorded', { usage_record: record });
  };

  const recordUsageAfter = async (request: ApiRequest): Promise<void> => {
    try {
      await record(request);
    } catch (error) {
      // Whatever happens here, the caller's response stays as it is.
      logger.error('Usage middleware failed', { error });
    }
  };

  return { after: recordUsageAfter, onError: recordUsageAfter, name: 'recordUsage' };
};
