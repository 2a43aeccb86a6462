import type { ApiMiddleware, ApiRequest } from './types';

export interface RequestContextOptions {
  /** Route template to record; defaults to the event's `routeKey`. */
  route?: string;
}

const defaults: RequestContextOptions = {};

/** Stamps the request with its id, start time and route before anything else runs. */
export const requestContext = (opts: RequestContextOptions = {}): ApiMiddleware => {
  const { route } = { ...defaults, ...opts };

  const requestContextBefore = ({ event, context }: ApiRequest): void => {
    context.startedAt = performance.now();
    context.receivedAt = new Date();
    context.requestId = event.requestContext?.requestId || context.awsRequestId;
    context.route = route ?? event.routeKey;
  };

  return { before: requestContextBefore, name: 'requestContext' };
};
