import { MetricUnit, type Metrics } from '@aws-lambda-powertools/metrics';
import type { ApiContext, ApiMiddleware, ApiRequest } from './types';

/**
 * Counts one event of the request in a metric, for flushMetrics to publish after it. Every
 * middleware stores its metrics this way: a metric stored otherwise waits for the next request
 * that stores one.
 */
export const addRequestMetric = (metrics: Pick<Metrics, 'addMetric'>, context: ApiContext, name: string): void => {
  metrics.addMetric(name, MetricUnit.Count, 1);
  context.metricsStored = true;
};

/**
 * Publishes the metrics a request stored, after it, success or error: what Powertools'
 * `logMetrics` does, except on requests that stored none, which is most of them. There
 * `logMetrics` still builds an empty EMF document, logs a notice and clears every store: 10 µs
 * of a request's 30 µs budget (docs/performance.md "Where the µs go"). Which requests stored one
 * is on their context (addRequestMetric), not asked of Powertools, whose store reads the
 * environment at every call (1 µs). Nothing on the request path adds dimensions or metadata
 * without a metric, so there is nothing else to clear.
 */
export const flushMetrics = (metrics: Pick<Metrics, 'hasStoredMetrics' | 'publishStoredMetrics'>): ApiMiddleware => {
  const flushMetricsAfter = ({ context }: ApiRequest): void => {
    if (context.metricsStored && metrics.hasStoredMetrics()) metrics.publishStoredMetrics();
  };
  return { after: flushMetricsAfter, onError: flushMetricsAfter, name: 'flushMetrics' };
};
