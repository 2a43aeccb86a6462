import { COMMON_HEADERS } from '../http/response';
import type { ApiMiddleware, ApiRequest } from './types';

/** Adds the headers every response carries, success or error, and the request id. */
export const responseHeaders = (): ApiMiddleware => {
  const addHeaders = ({ response, context }: ApiRequest): void => {
    if (!response) return;
    response.headers = {
      ...COMMON_HEADERS,
      ...response.headers,
      ...context.responseHeaders,
      'X-Request-Id': context.requestId,
    };
  };
  return { after: addHeaders, onError: addHeaders, name: 'responseHeaders' };
};
