import type { Logger } from '@aws-lambda-powertools/logger';
import type { ApiMiddleware, ApiRequest } from './types';

/** Puts a request's own fields on the lines it logs (shared/lambda/request-log-formatter.ts). */
export interface RequestLogFields {
  setRequest(awsRequestId: string, fields: { request_id: string; route: string }): void;
}

export interface RequestContextOptions {
  /** Gets the Lambda context fields on every line it logs during the request. */
  logger: Pick<Logger, 'addContext' | 'refreshSampleRateCalculation'>;
  /** The logger's formatter: `request_id` and `route` on every line of the request. */
  logFields: RequestLogFields;
  /** Route template to record; defaults to the event's `routeKey`. */
  route?: string;
  /**
   * Whether Powertools' debug log sampling (POWERTOOLS_LOGGER_SAMPLE_RATE) is on, so each request
   * draws again. Off, the call would only set the log level it already has.
   * @default true
   */
  debugSampling?: boolean;
}

/**
 * Stamps the request with its id, start time and route before anything else runs, and gives the
 * logger the request's fields: what Powertools' injectLambdaContext({ resetKeys: true }) did, in
 * one middleware instead of a before/after pair (docs/performance.md "Where the µs go"). Nothing
 * is reset after the request: the Lambda context and the request's fields are replaced here,
 * first thing, by every request, so every line of a request carries its own. The request's
 * fields are added by the formatter as lines are written, not appended as temporary keys (5 µs a
 * request). Not carried over: injectLambdaContext's POWERTOOLS_LOGGER_LOG_EVENT, which would log
 * the whole event, Authorization header included.
 */
export const requestContext = ({
  logger,
  logFields,
  route,
  debugSampling = true,
}: RequestContextOptions): ApiMiddleware => {
  const requestContextBefore = ({ event, context }: ApiRequest): void => {
    context.startedAt = performance.now();
    context.receivedAt = new Date();
    context.requestId = event.requestContext?.requestId || context.awsRequestId;
    context.route = route ?? event.routeKey;
    delete context.responseHeaders;
    // Powertools' debug log sampling (POWERTOOLS_LOGGER_SAMPLE_RATE) draws again per request.
    if (debugSampling) logger.refreshSampleRateCalculation();
    logger.addContext(context);
    logFields.setRequest(context.awsRequestId, { request_id: context.requestId, route: context.route });
  };

  return { before: requestContextBefore, name: 'requestContext' };
};
