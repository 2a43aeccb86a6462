/**
 * HTTP plumbing of the proxies in front of the embedded DynamoDB (the change feed's, the verify
 * run's recording proxies, the tests' fault proxy).
 */
import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';

/** The whole body of a request or response, for a proxy that looks at what it passes on. */
export const readBody = async (stream: IncomingMessage): Promise<Buffer> => {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
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
  onAnswer?: (statusCode: number) => void,
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
      onAnswer?.(answer.statusCode ?? 502);
      response.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(response);
    },
  );
  out.on('error', () => response.destroy());
  if (onSettled) out.once('close', onSettled);
  out.end(body);
};
