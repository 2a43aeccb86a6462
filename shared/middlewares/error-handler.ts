import type { Logger } from '@aws-lambda-powertools/logger';
import { DataStoreUnavailableError } from '../data-store-errors';
import { ApiError, internalError, serviceUnavailable } from '../http/errors';
import { errorResponse } from '../http/response';
import type { ApiMiddleware, ApiRequest } from './types';

export interface ErrorHandlerOptions {
  logger: Pick<Logger, 'warn' | 'error'>;
}

/** Any error → the API's error response. The one place errors become responses. */
export const toApiError = (error: unknown): ApiError => {
  if (error instanceof ApiError) return error;
  if (error instanceof DataStoreUnavailableError) return serviceUnavailable(error.retryAfterSeconds);
  return internalError();
};

/**
 * Maps every error to a documented response. Callers see a code and a message, never a stack,
 * an SDK message or a table name; the cause goes to the log.
 */
export const errorHandler = ({ logger }: ErrorHandlerOptions): ApiMiddleware => {
  const errorHandlerOnError = (request: ApiRequest): void => {
    const { error, context } = request;
    const apiError = toApiError(error);
    if (apiError.status >= 500) {
      const log = apiError.status === 503 ? logger.warn.bind(logger) : logger.error.bind(logger);
      log('Request failed', { request_id: context.requestId, route: context.route, error });
    }
    // Set, not returned: returning would end the chain before the headers and usage middlewares.
    request.response = errorResponse(apiError, context.requestId);
  };
  return { onError: errorHandlerOnError, name: 'errorHandler' };
};
