/**
 * The Middy middleware chain every function shares. Attach order matters: Middy runs `before` in
 * order and `after`/`onError` in reverse, so on the way out the error mapper turns any error into
 * a catalogue error first, `@middy/http-error-handler` writes it, headers are added, observers (the
 * usage record) see the final response, and the request's metrics are flushed last. The request's
 * log fields are set first, by requestContext.
 */
import middy from '@middy/core';
import httpErrorHandler from '@middy/http-error-handler';
import type { ApiEvent, ApiResponse } from './http/response';
import { errorMapper, flushMetrics, requestContext, responseHeaders } from './middlewares';
import type { ApiContext, ApiMiddleware, RequestLogFields } from './middlewares';
import type { Logger } from '@aws-lambda-powertools/logger';
import type { Metrics } from '@aws-lambda-powertools/metrics';

export type ChainHandler<TContext extends ApiContext = ApiContext> = (
  event: ApiEvent,
  context: TContext,
) => Promise<ApiResponse>;

export interface ChainOptions {
  /** The container's Powertools logger (shared/lambda/observability.ts). */
  logger: Logger;
  /** That logger's formatter, which puts `request_id` and `route` on a request's lines. */
  logFields: RequestLogFields;
  /** The container's Powertools metrics, flushed after every request that stored any. */
  metrics: Metrics;
  /** Route template to record; defaults to the event's `routeKey`. */
  route?: string;
  /** Powertools' debug log sampling is configured (shared/lambda/observability.ts). @default true */
  debugSampling?: boolean;
  /** Run before the handler, in order (authentication, scope). */
  guards?: ApiMiddleware[];
  /** See every final response, error responses included (usage recording). */
  observers?: ApiMiddleware[];
  /**
   * Keep Middy's early timeout (answer 5 ms before the Lambda timeout). Off by default: an
   * endpoint's bounded DynamoDB calls end well before its timeout (docs/decisions.md "Deadlines and timeouts").
   */
  earlyTimeout?: boolean;
}

/** Middy's plugin options: `timeoutEarlyInMillis: 0` skips its per-request timer and promise race. */
const NO_EARLY_TIMEOUT = { timeoutEarlyInMillis: 0 };

export const createMiddlewareChain = (
  handler: ChainHandler,
  { logger, logFields, metrics, route, debugSampling, guards = [], observers = [], earlyTimeout = false }: ChainOptions,
) =>
  middy<ApiEvent, ApiResponse, Error, ApiContext>(handler, earlyTimeout ? {} : NO_EARLY_TIMEOUT)
    .use(
      requestContext({
        logger,
        logFields,
        ...(route === undefined ? {} : { route }),
        ...(debugSampling === undefined ? {} : { debugSampling }),
      }),
    )
    .use(flushMetrics(metrics))
    .use(observers)
    .use(responseHeaders())
    // Off: the package would print every 401 to stderr; the mapper logs 5xx through Powertools.
    .use(httpErrorHandler({ logger: false }) as ApiMiddleware)
    .use(errorMapper({ logger }))
    .use(guards);
