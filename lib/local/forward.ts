/**
 * Forwards one HTTP request, body already read, to an upstream as a reverse proxy does (the
 * upstream sees its own address as Host), for the proxies in front of the embedded DynamoDB.
 */
import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';

export const forwardRequest = (
  upstream: URL,
  request: IncomingMessage,
  response: ServerResponse,
  body: Buffer,
  onAnswer?: (statusCode: number) => void,
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
  out.end(body);
};
