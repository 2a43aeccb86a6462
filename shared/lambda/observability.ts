/**
 * Structured logs and metrics (Powertools), one instance each per container. Nothing here ever
 * logs a request's headers: the Authorization header and key values stay out of the logs.
 */
import { Metrics } from '@aws-lambda-powertools/metrics';

import { METRICS_NAMESPACE, SERVICE_NAME } from '../domain/telemetry';
import { ApiLogger } from './api-logger';
import { RequestLogFormatter } from './request-log-formatter';

export * from '../domain/telemetry';
export { ApiLogger };

/** The logger's formatter: Powertools' format, with the API request's fields on its lines. */
export const logFields = new RequestLogFormatter();

export const logger = new ApiLogger({ serviceName: SERVICE_NAME, logFormatter: logFields });

/**
 * Powertools' debug log sampling is on (its one source here: no sample rate is passed in code).
 * Without it the per-request draw (requestContext) is skipped.
 */
export const debugSampling = Number(process.env.POWERTOOLS_LOGGER_SAMPLE_RATE ?? 0) > 0;

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

/**
 * What every middleware chain of this container observes with (shared/api/middleware-chain.ts):
 * the logger together with its own formatter, so the two a chain is given always belong together.
 */
export const telemetry = { logger, logFields, metrics, debugSampling } as const;
