import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';

export type ApiEvent = APIGatewayProxyEventV2;
export interface ApiResponse extends APIGatewayProxyStructuredResultV2 {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
}

export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/** Headers on every response, success or error (docs/decisions.md "HTTP contract"). */
export const COMMON_HEADERS: Readonly<Record<string, string>> = {
  'Content-Type': JSON_CONTENT_TYPE,
  'Cache-Control': 'no-store',
  'X-Content-Type-Options': 'nosniff',
};

export const jsonResponse = (statusCode: number, body: unknown, headers: Record<string, string> = {}): ApiResponse => ({
  statusCode,
  headers,
  body: JSON.stringify(body),
});
