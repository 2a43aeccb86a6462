/**
 * HTTP plumbing of the local servers: the gateway, and the proxies in front of the embedded
 * DynamoDB (the change feed's, the verify run's, the tests' fault proxy).
 */
import { request as httpRequest, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';

/** What readBody throws past its bound. */
export class BodyTooLargeError extends Error {}

/** The whole body of a request or response; past `maxBytes`, BodyTooLargeError before the rest is read. */
export const readBody = async (stream: IncomingMessage, maxBytes = Number.POSITIVE_INFINITY): Promise<Buffer> => {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    length += chunk.length;
    if (length > maxBytes) throw new BodyTooLargeError();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
};

export interface Answer {
  statusCode: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/**
 * Sends a request on, body already read, as a reverse proxy does (the upstream sees its own address
 * as Host; the body may have been rewritten), and reads its whole answer.
 */
export const forwardTo = (upstream: URL, request: IncomingMessage, body: Buffer) =>
  new Promise<Answer>((resolve, reject) => {
    const out = httpRequest({
      hostname: upstream.hostname,
      port: upstream.port,
      method: request.method,
      path: request.url,
      headers: { ...request.headers, host: upstream.host, 'content-length': String(body.length) },
    });
    out.on('error', reject);
    out.on('response', (answer) =>
      readBody(answer).then(
        (read) => resolve({ statusCode: answer.statusCode ?? 502, headers: answer.headers, body: read }),
        reject,
      ),
    );
    out.end(body);
  });

/**
 * Forwards one request and answers with what the upstream answered. `onSettled` runs once the
 * upstream call is over (answered or failed), so a proxy can wait for it before it closes.
 */
export const forwardRequest = (
  upstream: URL,
  request: IncomingMessage,
  response: ServerResponse,
  body: Buffer,
  onSettled?: () => void,
): void =>
  void forwardTo(upstream, request, body)
    .then(
      (answer) => response.writeHead(answer.statusCode, answer.headers).end(answer.body),
      () => response.destroy(),
    )
    .finally(onSettled);
