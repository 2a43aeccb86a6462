import type { Logger } from '@aws-lambda-powertools/logger';
import type { ApiMiddleware, ApiRequest } from './types';

export interface RequestContextOptions {
  /** Gets `request_id` and `route` as keys of the request; injectLambdaContext resets them after it. */
  logger: Pick<Logger, 'appendKeys'>;
  /** Route template to record; defaults to the event's `routeKey`. */
  route?: string;
}

/** Stamps the request with its id, arrival time and route, and puts the first two on its log lines. */
export const requestContext = ({ logger, route }: RequestContextOptions): ApiMiddleware => {
  const requestContextBefore = ({ event, context }: ApiRequest): void => {
    context.startedAt = performance.now();
    context.receivedAt = new Date();
    context.requestId = event.requestContext?.requestId || context.awsRequestId;
    context.route = route ?? event.routeKey;
    delete context.responseHeaders;
    logger.appendKeys({ request_id: context.requestId, route: context.route });
  };

  return { before: requestContextBefore, name: 'requestContext' };
};
