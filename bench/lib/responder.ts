/**
 * A DynamoDB that answers at once: an HTTP server on loopback answering every call a request
 * makes with canned DynamoDB JSON. The SDK does all its work per call (serialize, sign,
 * deserialize, unmarshall) and the database's latency is gone, so what a request costs beyond
 * the same calls made bare is the service's own work.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { benchKey, branchItems } from './fixtures';

type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

/** Plain JSON → DynamoDB attribute values (strings, numbers, booleans, lists, maps: the fixtures' types). */
const toAttribute = (value: Json): Record<string, unknown> => {
  if (typeof value === 'string') return { S: value };
  if (typeof value === 'number') return { N: String(value) };
  if (typeof value === 'boolean') return { BOOL: value };
  if (value === null) return { NULL: true };
  if (Array.isArray(value)) return { L: value.map(toAttribute) };
  return { M: toItem(value) };
};
const toItem = (item: object) =>
  Object.fromEntries(Object.entries(item as Record<string, Json>).map(([name, value]) => [name, toAttribute(value)]));

export interface Responder {
  endpoint: string;
  /** Calls it could not answer: a request that made one went down an error path. */
  unanswered: string[];
  close(): Promise<void>;
}

/**
 * Answers the bench key's GetItem (any other key hash: no item), the demo branch's items, the
 * counter's UpdateItem (a count of 1: the limiter admits) and PutItem; anything else is a 400,
 * recorded in `unanswered`.
 */
export const startResponder = async (keysTable: string): Promise<Responder> => {
  const keysMarker = `"TableName":"${keysTable}"`;
  const bodies = {
    key: JSON.stringify({ Item: toItem(benchKey.item) }),
    none: '{}',
    branch: JSON.stringify({ Item: toItem(branchItems.branch) }),
    members: JSON.stringify({ Items: branchItems.members.map(toItem), Count: branchItems.members.length }),
    providers: JSON.stringify({
      Items: branchItems.activeProviders.map(toItem),
      Count: branchItems.activeProviders.length,
    }),
    providerById: branchItems.activeProviders.map((item) => [`"${item.sk}"`, JSON.stringify({ Item: toItem(item) })]),
    counted: JSON.stringify({ Attributes: { count: { N: '1' } } }),
  };
  const answer = (operation: string, body: string): string | undefined => {
    switch (operation) {
      case 'GetItem':
        if (body.includes(keysMarker)) return body.includes(benchKey.hash) ? bodies.key : bodies.none;
        if (body.includes('"PROVIDER#')) return bodies.providerById.find(([sk]) => body.includes(sk!))?.[1];
        return bodies.branch;
      case 'Query':
        return body.includes('"IndexName"') ? bodies.providers : bodies.members;
      case 'PutItem':
        return bodies.none;
      case 'UpdateItem':
        return bodies.counted;
      default:
        return undefined;
    }
  };
  const unanswered: string[] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const target = request.headers['x-amz-target'];
      const operation = typeof target === 'string' ? target.slice(target.indexOf('.') + 1) : '';
      const body = answer(operation, Buffer.concat(chunks).toString());
      if (body === undefined) unanswered.push(operation);
      response.writeHead(body === undefined ? 400 : 200, { 'Content-Type': 'application/x-amz-json-1.0' });
      response.end(body ?? JSON.stringify({ __type: 'ValidationException', message: `bench: no ${operation}` }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    unanswered,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
};

/** Makes `client` (and every client built from the same DynamoDBClient) send through `responder`. */
export const useTransport = (client: { config: unknown }, responder: Responder): void => {
  (client.config as { requestHandler: unknown }).requestHandler = responder;
};
