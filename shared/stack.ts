/**
 * The Middy stack every function shares. Attach order matters: Middy runs `before` in order
 * and `after`/`onError` in reverse, so on the way out errors are mapped first, then headers
 * are added, and observers (the usage record) run last, when status and timing are final.
 */
import middy from '@middy/core';
import type { ApiEvent, ApiResponse } from './http/response';
import { errorHandler, requestContext, responseHeaders } from './middlewares';
import type { ApiContext, ApiMiddleware } from './middlewares';
import { logger } from './observability';

export type StackHandler<TContext extends ApiContext = ApiContext> = (
  event: ApiEvent,
  context: TContext,
) => Promise<ApiResponse>;

export interface StackOptions {
  /** Route template to record; defaults to the event's `routeKey`. */
  route?: string;
  /** Run before the handler, in order (authentication, scope). */
  guards?: ApiMiddleware[];
  /** See every final response, error responses included (usage recording). */
  observers?: ApiMiddleware[];
}

export const createStack = (handler: StackHandler, { route, guards = [], observers = [] }: StackOptions = {}) =>
  middy<ApiEvent, ApiResponse, Error, ApiContext>(handler)
    .use(requestContext(route === undefined ? {} : { route }))
    .use(observers)
    .use(responseHeaders())
    .use(errorHandler({ logger }))
    .use(guards);
