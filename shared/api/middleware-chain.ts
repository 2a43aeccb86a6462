/**
 * The Middy middleware chain every function shares, in one place. Middy runs `before` in attach
 * order and `after`/`onError` in reverse, so the chain is, on the way in:
 *
 * 1. injectLambdaContext (Powertools): the Lambda context on every log line; on the way out, last,
 *    it resets the request's keys.
 * 2. requestContext: the request's id, arrival time and route, and `request_id`/`route` as log keys.
 * 3. logMetrics (Powertools): on the way out, publishes what the request stored, after the observers.
 * 4. observers (the usage record): see the final response, error responses included.
 * 5. responseHeaders: the headers every response carries.
 * 6. httpErrorHandler (@middy): writes the error response the mapper prepared.
 * 7. errorMapper: on the way out, first, turns any error into a catalogue error.
 * 8. guards (authentication, rate limit, IP allowlist, scope), then the handler.
 */
import middy from '@middy/core';
import httpErrorHandler from '@middy/http-error-handler';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import type { Logger } from '@aws-lambda-powertools/logger';
import type { Metrics } from '@aws-lambda-powertools/metrics';
import type { ApiEvent, ApiResponse } from './http/response';
import { errorMapper, requestContext, responseHeaders } from './middlewares';
import type { ApiContext, ApiMiddleware } from './middlewares';

export type ChainHandler<TContext extends ApiContext = ApiContext> = (
  event: ApiEvent,
  context: TContext,
) => Promise<ApiResponse>;

export interface ChainOptions {
  /** The container's Powertools logger (shared/lambda/observability.ts). */
  logger: Logger;
  /** The container's Powertools metrics, published after every request. */
  metrics: Metrics;
  /** Route template to record; defaults to the event's `routeKey`. */
  route?: string;
  /** Run before the handler, in order (authentication, rate limit, IP allowlist, scope). */
  guards?: ApiMiddleware[];
  /** See every final response, error responses included (usage recording). */
  observers?: ApiMiddleware[];
  /**
   * Keep Middy's early timeout (answer 5 ms before the Lambda timeout). Off by default: an
   * endpoint's bounded DynamoDB calls end well before its timeout (docs/decisions.md "Deadlines and timeouts").
   */
  earlyTimeout?: boolean;
}

export const createMiddlewareChain = (
  handler: ChainHandler,
  { logger, metrics, route, guards = [], observers = [], earlyTimeout = false }: ChainOptions,
) =>
  middy<ApiEvent, ApiResponse, Error, ApiContext>(handler, earlyTimeout ? {} : { timeoutEarlyInMillis: 0 })
    // logEvent off whatever POWERTOOLS_LOGGER_LOG_EVENT says: the event holds the Authorization header.
    .use(injectLambdaContext(logger, { resetKeys: true, logEvent: false }) as ApiMiddleware)
    .use(requestContext({ logger, ...(route === undefined ? {} : { route }) }))
    .use(logMetrics(metrics) as ApiMiddleware)
    .use(observers)
    .use(responseHeaders())
    // Off: the package would print every 401 to stderr; the mapper logs 5xx through Powertools.
    .use(httpErrorHandler({ logger: false }) as ApiMiddleware)
    .use(errorMapper({ logger }))
    .use(guards);
