/**
 * Builds the API Gateway HTTP API (payload 2.0) event and Lambda context a function receives,
 * so the local gateway and the tests invoke handlers exactly as AWS does: lower-cased headers
 * (repeated ones joined with commas), decoded rawPath and query values, raw query string,
 * repeated query parameters joined with commas, `requestContext.http`, the stage prefix.
 */
import { randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';
import type { ApiEvent } from '../../shared/api/http/response';
import { API_STAGE, ENDPOINT_TIMEOUT_SECONDS } from '../../shared/api/routes';

export const LOCAL_STAGE = API_STAGE;

export interface EventInput {
  method?: string;
  /** Path relative to {base_url}, percent-encoded as sent on the wire, e.g. `/v1/members`. */
  path: string;
  /** Raw query string without `?`, or an object of parameters. */
  query?: string | Record<string, string | string[]>;
  headers?: Record<string, string | string[] | undefined>;
  /** Route template that matched, e.g. `GET /v1/payment-providers/{id}`; `$default` when none. */
  routeKey?: string;
  /** Raw (still encoded) path parameters. */
  pathParameters?: Record<string, string>;
  requestId?: string;
  sourceIp?: string;
  stage?: string;
  /** The request body as sent: text stays text, other bytes are base64-encoded (as API Gateway does). */
  body?: string | Buffer;
}

/** `body` and `isBase64Encoded` of the event: UTF-8 text as it is, anything else in base64. */
const eventBody = (body: EventInput['body']): { body?: string; isBase64Encoded: boolean } => {
  if (body === undefined || body.length === 0) return { isBase64Encoded: false };
  if (typeof body === 'string') return { body, isBase64Encoded: false };
  const text = body.toString('utf8');
  return Buffer.from(text, 'utf8').equals(body)
    ? { body: text, isBase64Encoded: false }
    : { body: body.toString('base64'), isBase64Encoded: true };
};

const safeDecode = (value: string): string => {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
};

/** Name → value, a repeated name's values joined with commas (as API Gateway joins them). */
const joinRepeated = (pairs: Iterable<[string, string]>): Record<string, string> => {
  const joined: Record<string, string> = {};
  for (const [name, value] of pairs) joined[name] = Object.hasOwn(joined, name) ? `${joined[name]},${value}` : value;
  return joined;
};

const toRawQuery = (query: EventInput['query']): string =>
  typeof query === 'object'
    ? new URLSearchParams(
        Object.entries(query).flatMap(([name, value]) => [value].flat().map((one): [string, string] => [name, one])),
      ).toString()
    : (query ?? '');

export const buildEvent = (input: EventInput): ApiEvent => {
  const method = (input.method ?? 'GET').toUpperCase();
  const stage = input.stage ?? LOCAL_STAGE;
  const rawQueryString = toRawQuery(input.query);
  const headers = joinRepeated(
    Object.entries(input.headers ?? {}).flatMap(([name, value]): [string, string][] =>
      value === undefined ? [] : [[name.toLowerCase(), [value].flat().join(',')]],
    ),
  );
  const queryStringParameters = rawQueryString ? joinRepeated(new URLSearchParams(rawQueryString)) : undefined;
  const pathParameters = input.pathParameters
    ? Object.fromEntries(Object.entries(input.pathParameters).map(([k, v]) => [k, safeDecode(v)]))
    : undefined;
  const requestId = input.requestId ?? randomUUID();
  const rawPath = safeDecode(stage === '$default' ? input.path : `/${stage}${input.path}`);
  const now = new Date();
  return {
    version: '2.0',
    routeKey: input.routeKey ?? '$default',
    rawPath,
    rawQueryString,
    headers,
    ...(queryStringParameters ? { queryStringParameters } : {}),
    ...(pathParameters ? { pathParameters } : {}),
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      domainName: headers.host ?? 'localhost',
      domainPrefix: (headers.host ?? 'localhost').split('.')[0] ?? 'localhost',
      http: {
        method,
        path: rawPath,
        protocol: 'HTTP/1.1',
        sourceIp: input.sourceIp ?? '127.0.0.1',
        userAgent: headers['user-agent'] ?? '',
      },
      requestId,
      routeKey: input.routeKey ?? '$default',
      stage,
      time: now.toISOString(),
      timeEpoch: now.getTime(),
    },
    ...eventBody(input.body),
  };
};

/**
 * A Lambda context like the runtime's, its remaining time counting down from the function's
 * timeout (shared/api/routes.ts) as a deployed function's does.
 */
export const buildContext = (functionName = 'branch-api-local', timeoutSeconds = ENDPOINT_TIMEOUT_SECONDS): Context => {
  const deadline = Date.now() + timeoutSeconds * 1000;
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${functionName}`,
    memoryLimitInMB: '256',
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
};
