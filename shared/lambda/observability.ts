/**
 * Structured logs and metrics (Powertools), one instance each per container. Nothing here ever
 * logs a request's headers: the Authorization header and key values stay out of the logs.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';

export const SERVICE_NAME = 'branch-api';
export const METRICS_NAMESPACE = 'BranchApi';
/** Emitted by the usage middleware when a record could not be stored after its retries. */
export const USAGE_WRITE_FAILED_METRIC = 'UsageRecordWriteFailed';
/** Emitted when a key's rate-limit counter could not be updated and the call was admitted anyway. */
export const RATE_LIMIT_COUNTER_FAILED_METRIC = 'RateLimitCounterFailed';

export const logger = new Logger({ serviceName: SERVICE_NAME });

/**
 * Powertools warns at every flush that has no metric, which is most requests: that one notice
 * goes to debug, every other warning of the metrics library stays a warning.
 */
const NO_METRICS_NOTICE = 'No application metrics to publish';
const metricsLogger = {
  debug: (message: string) => logger.debug(message),
  info: (message: string) => logger.info(message),
  warn: (message: string) => (message.startsWith(NO_METRICS_NOTICE) ? logger.debug(message) : logger.warn(message)),
  error: (message: string) => logger.error(message),
};

export const metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName: SERVICE_NAME, logger: metricsLogger });
