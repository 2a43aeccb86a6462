/**
 * HTTP plumbing of the local servers: the gateway, and the proxies in front of the embedded
 * DynamoDB (the change feed's, the verify run's, the tests' fault proxy).
 */
import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';

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

/**
 * Forwards one request, body already read, as a reverse proxy does: the upstream sees its own
 * address as Host. `onSettled` runs once the upstream call is over (answered or failed), so a
 * proxy can wait for it before it closes.
 */
export const forwardRequest = (
  upstream: URL,
  request: IncomingMessage,
  response: ServerResponse,
  body: Buffer,
  onSettled?: () => void,
): void => {
  const out = httpRequest(
    {
      hostname: upstream.hostname,
      port: upstream.port,
      method: request.method,
      path: request.url,
      headers: { ...request.headers, host: upstream.host },
    },
    (answer) => {
      response.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(response);
    },
  );
  out.on('error', () => response.destroy());
  if (onSettled) out.once('close', onSettled);
  out.end(body);
};
