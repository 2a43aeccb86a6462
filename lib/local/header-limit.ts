/**
 * API Gateway's bound on request headers, kept by the local gateway (docs/decisions.md "Errors"):
 * the request line and the header values together, counted as raw bytes as they arrive (Node's
 * parser leaves a value's leading whitespace out of its own count, so padding slipped past it).
 * The refusal is a 431 `headers_too_large` in the API's error shape. Node's own bound stays as a
 * backstop; its other parse errors keep Node's default answer, a bare 400.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { errorBody, headersTooLarge } from '../../shared/api/errors';
import { MAX_REQUEST_HEADER_BYTES } from '../../shared/api/http/request-limits';
import { COMMON_HEADERS } from '../../shared/api/http/response';

/** Options for `http.createServer`. */
export const HEADER_LIMIT = { maxHeaderSize: MAX_REQUEST_HEADER_BYTES } as const;

const rawResponse = (status: string, headers: Record<string, string>, body = ''): string =>
  [`HTTP/1.1 ${status}`, ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`), '', body].join('\r\n');

const tooLarge = (): string => {
  const [error, requestId] = [headersTooLarge(), randomUUID()];
  const body = JSON.stringify(errorBody(error, requestId));
  const length = String(Buffer.byteLength(body));
  const headers = { ...COMMON_HEADERS, 'X-Request-Id': requestId, 'Content-Length': length, Connection: 'close' };
  return rawResponse(`${error.statusCode} Request Header Fields Too Large`, headers, body);
};

/** Sockets whose request went past the bound: answered already, their request is not served. */
const refused = new WeakSet<Duplex>();

/** True when the request's socket was answered with the 431 already. */
export const headersRefused = (request: IncomingMessage): boolean => refused.has(request.socket);

/** Where a connection's count stands: counting a header section, or waiting for its answer. */
const fresh = () => ({ counting: true, bytes: 0, lines: 0, partial: '' });
const counts = new WeakMap<Duplex, ReturnType<typeof fresh>>();

/**
 * Counts one connection's header sections, line by line as bytes arrive: the request line whole,
 * a header line from after its colon. From a section's end until its response is sent nothing is
 * counted (the body); a pipelined request is undercounted, never refused wrongly.
 */
const countHeaderBytes = (socket: Socket) => {
  const count = fresh();
  counts.set(socket, count);
  // Before Node's parser sees the bytes, so a refused request is never served.
  socket.prependListener('data', (chunk: Buffer) => {
    if (!count.counting || refused.has(socket)) return;
    const parts = (count.partial + chunk.toString('latin1')).split('\r\n');
    count.partial = parts.pop()!;
    for (const line of parts) {
      if (line === '') {
        count.counting = false;
        count.partial = '';
        break;
      }
      count.bytes += count.lines === 0 ? line.length : line.length - line.indexOf(':') - 1;
      count.lines += 1;
    }
    if (count.bytes > MAX_REQUEST_HEADER_BYTES || count.partial.length > 2 * MAX_REQUEST_HEADER_BYTES) {
      refused.add(socket);
      socket.end(tooLarge());
    }
  });
};

/** Answers requests whose headers overflow the bound with the API's 431. */
export const answerOversizedHeaders = (server: Server): void => {
  server.on('connection', countHeaderBytes);
  server.on('request', (request: IncomingMessage, response: ServerResponse) =>
    response.once('finish', () => {
      const count = counts.get(request.socket);
      if (count) Object.assign(count, fresh());
    }),
  );
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    if (!socket.writable || error.code === 'ECONNRESET' || refused.has(socket)) {
      socket.destroy();
      return;
    }
    socket.end(
      error.code === 'HPE_HEADER_OVERFLOW' ? tooLarge() : rawResponse('400 Bad Request', { Connection: 'close' }),
    );
  });
};
