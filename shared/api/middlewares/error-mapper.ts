import type { Logger } from '@aws-lambda-powertools/logger';
import { createError } from '@middy/util';
import { DataStoreUnavailableError } from '../../data/data-store-errors';
import { ApiError, errorBody, internalError, serviceUnavailable } from '../errors';
import { JSON_CONTENT_TYPE } from '../http/response';
import type { ApiMiddleware, ApiRequest } from './types';

export interface ErrorMapperOptions {
  logger: Pick<Logger, 'warn' | 'error'>;
}

interface ExposedHttpError {
  statusCode: number;
  expose: boolean;
  message: string;
}

const isExposedClientError = (error: unknown): error is ExposedHttpError => {
  const { statusCode, expose } = (error ?? {}) as Partial<ExposedHttpError>;
  return typeof statusCode === 'number' && statusCode >= 400 && statusCode < 500 && expose === true;
};

/** Any error → the catalogue error a caller may see. */
export const toApiError = (error: unknown): ApiError => {
  if (error instanceof ApiError) return error;
  if (error instanceof DataStoreUnavailableError) return serviceUnavailable(error.retryAfterSeconds);
  // An exposed 4xx from another Middy middleware (a 415 from a body parser, say) keeps its meaning
  // under a documented code: a 404 stays `not_found`, any other 4xx is `invalid_request`.
  if (isExposedClientError(error)) {
    return new ApiError(error.statusCode === 404 ? 'not_found' : 'invalid_request', error.message);
  }
  return internalError();
};

/**
 * First on the way out: any error becomes an exposed HTTP error whose message is the API's JSON
 * body, for `@middy/http-error-handler` to write. Callers never see a stack, an SDK message or a
 * table name; the cause of a 5xx goes to the Powertools log.
 */
export const errorMapper = ({ logger }: ErrorMapperOptions): ApiMiddleware => {
  const errorMapperOnError = (request: ApiRequest): void => {
    const { error, context } = request;
    const apiError = toApiError(error);
    if (apiError.statusCode >= 500) {
      if (apiError.statusCode === 503) logger.warn('Request failed', { error });
      else logger.error('Request failed', { error });
    }
    // Middy's createError keeps only `expose` of its properties: the headers are set on the error.
    request.error = Object.assign(
      createError(apiError.statusCode, JSON.stringify(errorBody(apiError, context.requestId)), { expose: true }),
      {
        headers: { ...apiError.headers, 'Content-Type': JSON_CONTENT_TYPE },
      },
    );
  };
  return { onError: errorMapperOnError, name: 'errorMapper' };
};
