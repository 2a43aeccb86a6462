import { LogLevelThreshold, type Logger } from '@aws-lambda-powertools/logger';
import type { Metrics } from '@aws-lambda-powertools/metrics';
import { addRequestMetric } from './flush-metrics';
import { redactApiKeys } from '../../domain/api-key';
import { USAGE_WRITE_FAILED_METRIC } from '../../domain/telemetry';
import { DEFAULT_USAGE_RETENTION_DAYS, responseTimeMs } from '../../domain/usage-record';
import { isoTimestamp } from '../../domain/timestamps';
import type { UsageRecord } from '../../domain/usage-record';
import type { ApiMiddleware, ApiRequest } from './types';

export interface UsageSink {
  put(record: UsageRecord, retentionDays: number): Promise<void>;
}

export interface RecordUsageOptions {
  usage: UsageSink;
  /** With `mayLogDebug` (ApiLogger, shared/lambda/api-logger.ts), the level is read only when debug is possible. */
  logger: Pick<Logger, 'debug' | 'info' | 'error' | 'level'> & { readonly mayLogDebug?: boolean };
  /** Flushed after the request by the chain (flushMetrics). */
  metrics: Pick<Metrics, 'addMetric'>;
  /** Days before DynamoDB TTL removes a record. @default DEFAULT_USAGE_RETENTION_DAYS */
  retentionDays?: number;
}

const defaults = { retentionDays: DEFAULT_USAGE_RETENTION_DAYS };

/**
 * One usage record per call made with a known key, success or error, written after the response
 * is final. The write is retried by the SDK's retry strategy; if it still fails the response is
 * unchanged and the whole record goes to the error log (to be replayed) with a metric. Calls
 * without a known key have nothing to be recorded against: they go to the log only.
 */
export const recordUsage = (opts: RecordUsageOptions): ApiMiddleware => {
  const { usage, logger, metrics, retentionDays } = { ...defaults, ...opts };

  const middlewareFailed = (error: unknown): void => {
    // Whatever happens here, the caller's response stays as it is.
    logger.error('Usage middleware failed', { error });
  };

  /** The usage write, under way; nothing when the call had no known key. */
  const record = ({ event, context, response }: ApiRequest): Promise<void> | undefined => {
    const status = response?.statusCode ?? 500;
    const { apiKey } = context;
    const method = event.requestContext.http.method;
    const sourceIp = event.requestContext.http.sourceIp;
    // As requested, but never with a key in it (one pasted into the URL by mistake).
    const path = redactApiKeys(event.rawPath);
    if (!apiKey) {
      logger.info('Call without a known key', { method, path, status });
      return undefined;
    }
    const record: UsageRecord = {
      key_id: apiKey.key_id,
      branch_id: apiKey.branch_id,
      method,
      path,
      route: context.route,
      status,
      response_time_ms: responseTimeMs(context.startedAt),
      timestamp: isoTimestamp(context.receivedAt.getTime()),
      request_id: context.requestId,
    };
    if (sourceIp) record.source_ip = sourceIp;
    // Each outcome guards itself, so the write's promise is the only one: it never rejects.
    return usage.put(record, retentionDays).then(
      () => {
        try {
          // Checked first: Powertools reads the X-Ray trace id from the environment even for a line it drops.
          if (logger.mayLogDebug !== false && logger.level <= LogLevelThreshold.DEBUG) {
            logger.debug('Usage recorded', { usage_record: record });
          }
        } catch (error) {
          middlewareFailed(error);
        }
      },
      (error: unknown) => {
        try {
          logger.error('Usage record not stored', { usage_record: record, error });
          addRequestMetric(metrics, context, USAGE_WRITE_FAILED_METRIC);
        } catch (failure) {
          middlewareFailed(failure);
        }
      },
    );
  };

  // Not async: Middy awaits the write's own promise (one promise and resumption fewer per request).
  const recordUsageAfter = (request: ApiRequest): Promise<void> | undefined => {
    try {
      return record(request);
    } catch (error) {
      middlewareFailed(error);
      return undefined;
    }
  };

  return { after: recordUsageAfter, onError: recordUsageAfter, name: 'recordUsage' };
};
