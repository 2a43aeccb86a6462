/**
 * API Gateway's bound on request headers, kept by the local gateway (docs/decisions.md "Errors"):
 * Node's HTTP parser stops at MAX_REQUEST_HEADER_BYTES, and the refusal is written here as a 431
 * `headers_too_large` in the API's error shape instead of Node's bodiless default. Other parse
 * errors keep Node's default answer, a bare 400.
 */
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { errorBody, headersTooLarge } from '../../shared/api/errors';
import { MAX_REQUEST_HEADER_BYTES } from '../../shared/api/http/request-limits';
import { COMMON_HEADERS } from '../../shared/api/http/response';

/** Options for `http.createServer`. */
export const HEADER_LIMIT = { maxHeaderSize: MAX_REQUEST_HEADER_BYTES } as const;

const rawResponse = (status: string, headers: Record<string, string>, body = ''): string =>
  [`HTTP/1.1 ${status}`, ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`), '', body].join('\r\n');

const tooLarge = (): string => {
  const error = headersTooLarge();
  const requestId = randomUUID();
  const body = JSON.stringify(errorBody(error, requestId));
  return rawResponse(
    `${error.statusCode} Request Header Fields Too Large`,
    {
      ...COMMON_HEADERS,
      'X-Request-Id': requestId,
      'Content-Length': String(Buffer.byteLength(body)),
      Connection: 'close',
    },
    body,
  );
};

/** Answers requests whose headers overflow the bound with the API's 431. */
export const answerOversizedHeaders = (server: Server): void => {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    if (!socket.writable || error.code === 'ECONNRESET') {
      socket.destroy();
      return;
    }
    socket.end(
      error.code === 'HPE_HEADER_OVERFLOW' ? tooLarge() : rawResponse('400 Bad Request', { Connection: 'close' }),
    );
  });
};
