import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import type { ApiError } from './errors';

export type ApiEvent = APIGatewayProxyEventV2;
export interface ApiResponse extends APIGatewayProxyStructuredResultV2 {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
}

/** Headers on every response, success or error (DESIGN "HTTP contract"). */
export const COMMON_HEADERS: Readonly<Record<string, string>> = {
  'Content-Type': 'application/json; charset=utf-8',
  'Cache-Control': 'no-store',
  'X-Content-Type-Options': 'nosniff',
};

export const jsonResponse = (statusCode: number, body: unknown, headers: Record<string, string> = {}): ApiResponse => ({
  statusCode,
  headers,
  body: JSON.stringify(body),
});

export const errorResponse = (error: ApiError, requestId: string): ApiResponse =>
  jsonResponse(
    error.status,
    { error: { code: error.code, message: error.message, request_id: requestId } },
    { ...error.headers },
  );
