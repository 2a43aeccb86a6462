/**
 * Structured logs and metrics (Powertools), one instance each per container. Nothing here ever
 * logs a request's headers: the Authorization header and key values stay out of the logs.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';

import { METRICS_NAMESPACE, SERVICE_NAME } from '../domain/telemetry';

export * from '../domain/telemetry';

export const logger = new Logger({ serviceName: SERVICE_NAME });

/**
 * Powertools warns at every flush that has no metric, which is most requests: that notice is
 * dropped; every other message of the metrics library goes to the service's logger.
 */
const NO_METRICS_NOTICE = 'No application metrics to publish';
const metricsLogger = {
  debug: (message: string) => logger.debug(message),
  info: (message: string) => logger.info(message),
  warn: (message: string) => (message.startsWith(NO_METRICS_NOTICE) ? undefined : logger.warn(message)),
  error: (message: string) => logger.error(message),
};

export const metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName: SERVICE_NAME, logger: metricsLogger });

/** What every middleware chain of this container observes with (shared/api/middleware-chain.ts). */
export const telemetry = { logger, metrics } as const;
