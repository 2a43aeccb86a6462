import type middy from '@middy/core';
import type { Context } from 'aws-lambda';
import type { ApiEvent, ApiResponse } from '../http/response';
import type { ApiKeyRecord } from '../../domain/key-record';

/** The Lambda context, plus what the stack learns about the request as it runs. */
export interface ApiContext extends Context {
  /** API Gateway's request id: the X-Request-Id header and the usage record's request_id. */
  requestId: string;
  /** `performance.now()` when the request entered the stack. */
  startedAt: number;
  /** Wall-clock start, for the usage record's timestamp. */
  receivedAt: Date;
  /** Route template, e.g. `GET /v1/payment-providers/{id}`. */
  route: string;
  /** The key that made the call, once it has been found (even if then refused). */
  apiKey?: ApiKeyRecord;
  /** Headers a middleware wants on the final response, success or error (the rate-limit fields). */
  responseHeaders?: Record<string, string>;
}

/** What a handler sees: the stack has authenticated the key and checked its scope. */
export interface AuthenticatedContext extends ApiContext {
  apiKey: ApiKeyRecord;
}

export type ApiRequest = middy.Request<ApiEvent, ApiResponse, Error, ApiContext>;
export type ApiMiddleware = middy.MiddlewareObj<ApiEvent, ApiResponse, Error, ApiContext>;
