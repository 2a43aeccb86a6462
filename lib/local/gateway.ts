/**
 * A small local stand-in for API Gateway: each HTTP request becomes the same HTTP API (payload
 * 2.0) event AWS would send, routed by the shared route table to the same handler modules the
 * CDK stack deploys; anything unmatched goes to the same catch-all function as `$default`.
 */
import { BodyTooLargeError, readBody } from './forward';
import { listen } from './listen';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { ApiContext } from '../../shared/api/middlewares';
import { errorBody, internalError, payloadTooLarge, type ApiError } from '../../shared/api/errors';
import { COMMON_HEADERS, jsonResponse, type ApiEvent, type ApiResponse } from '../../shared/api/http/response';
import {
  fallbackEntry,
  matchRoute,
  pathWithinStage,
  routeKey,
  routes,
  secretScanningRoute,
  timeoutSecondsOf,
  type AnyRouteDefinition,
} from '../../shared/api/routes';
import { buildContext, buildEvent, LOCAL_STAGE } from './events';
import { invokeFunction } from './invoke';
import { loadHandler } from './functions';
import { LOCAL_API_PORT, LOCAL_HOST } from '../local-defaults';
import { answerOversizedHeaders, HEADER_LIMIT, headersRefused } from './header-limit';

type LambdaFunction = (event: ApiEvent, context: ApiContext) => Promise<ApiResponse>;

export interface StaticResponse {
  statusCode: number;
  headers: Record<string, string>;
  body: string | Buffer;
}

export interface GatewayOptions {
  /** 0 picks a free port. @default 3000 */
  port?: number;
  /** @default '127.0.0.1' */
  host?: string;
  /** Served before routing, without a key (the API document and docs page). */
  staticFiles?: (pathWithinStage: string) => StaticResponse | undefined;
}

export interface Gateway {
  /** `{base_url}`, e.g. http://127.0.0.1:3000/api */
  baseUrl: string;
  port: number;
  server: Server;
  close(): Promise<void>;
}

/** Imports every handler once, as a Lambda container would at init. */
const loadFunctions = async () => ({
  byRoute: new Map(
    await Promise.all(
      [...routes, secretScanningRoute].map(
        async (route: AnyRouteDefinition) => [route, await loadHandler<LambdaFunction>(route.entry)] as const,
      ),
    ),
  ),
  fallback: await loadHandler<LambdaFunction>(fallbackEntry),
});

/** API Gateway's own limit on a request body (HTTP API: 10 MB); a longer one is not read to the end. */
export const MAX_REQUEST_BODY_BYTES = 10 * 1024 * 1024;

/**
 * The request body, up to MAX_REQUEST_BODY_BYTES. A request without Content-Length or
 * Transfer-Encoding has none (RFC 9112 §6.3), which is every GET: no stream iterator for it.
 */
const requestBody = async (request: IncomingMessage): Promise<Buffer | undefined> =>
  request.headers['content-length'] === undefined && request.headers['transfer-encoding'] === undefined
    ? undefined
    : readBody(request, MAX_REQUEST_BODY_BYTES);

const errorResponse = (error: ApiError): ApiResponse => {
  const requestId = randomUUID();
  const headers = { ...COMMON_HEADERS, 'X-Request-Id': requestId };
  return jsonResponse(error.statusCode, errorBody(error, requestId), headers);
};

const send = (response: ServerResponse, result: StaticResponse | ApiResponse): void => {
  const body = typeof result.body === 'string' ? Buffer.from(result.body) : result.body;
  response.writeHead(result.statusCode, { ...result.headers, 'Content-Length': String(body.length) }).end(body);
};

export const startGateway = async (options: GatewayOptions = {}): Promise<Gateway> => {
  const functions = await loadFunctions();
  const host = options.host ?? LOCAL_HOST;

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const method = request.method ?? 'GET';
    const target = request.url ?? '/';
    const [, rawPath = '', rawQuery = ''] = /^([^?]*)\??(.*)$/s.exec(target)!;
    const path = pathWithinStage(rawPath, LOCAL_STAGE);
    const inStage = path !== rawPath;

    if (inStage && (method === 'GET' || method === 'HEAD')) {
      const file = options.staticFiles?.(path);
      if (file) return send(response, file);
    }

    let body: Buffer | undefined;
    try {
      body = await requestBody(request);
    } catch (error) {
      if (!(error instanceof BodyTooLargeError)) throw error;
      response.setHeader('Connection', 'close');
      return send(response, errorResponse(payloadTooLarge()));
    }
    const match = inStage ? matchRoute(method, path) : undefined;
    const route = match?.kind === 'route' ? match.route : undefined;
    const event = buildEvent({
      method,
      path: inStage ? path : rawPath,
      stage: inStage ? LOCAL_STAGE : '$default',
      query: rawQuery,
      // Every value of a repeated header, joined with commas by buildEvent as API Gateway does
      // (Node's `headers` would drop a repeated Authorization).
      headers: request.headersDistinct,
      requestId: randomUUID(),
      sourceIp: request.socket.remoteAddress ?? '127.0.0.1',
      body,
      ...(route && match?.kind === 'route'
        ? { routeKey: routeKey(route), pathParameters: match.pathParameters }
        : { routeKey: '$default' }),
    });
    const fn = (route && functions.byRoute.get(route)) ?? functions.fallback;
    const context = buildContext(undefined, timeoutSecondsOf(event.routeKey)) as ApiContext;
    send(response, await invokeFunction(fn, event, context));
  };

  const server = createServer(HEADER_LIMIT, (request, response) => {
    if (headersRefused(request)) return;
    handle(request, response).catch(() => {
      // The stack maps every error itself; this is only reached if a function crashes outright.
      if (!response.headersSent) send(response, errorResponse(internalError()));
      else response.destroy();
    });
  });
  answerOversizedHeaders(server);
  server.keepAliveTimeout = 5_000;
  const asked = options.port ?? LOCAL_API_PORT;
  const port = await listen(
    server,
    asked,
    host,
    `Port ${asked} on ${host} is already in use; set PORT to another port`,
  );
  return {
    baseUrl: `http://${host}:${port}/${LOCAL_STAGE}`,
    port,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
};
