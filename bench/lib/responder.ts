/**
 * An in-process DynamoDB transport: an SDK request handler that answers every call at once with
 * canned DynamoDB JSON. Only the network hop is replaced; everything the SDK does per call still
 * runs (serialize, endpoint, sign, retry bookkeeping, deserialize, unmarshall). With the
 * database's latency gone, what remains is CPU: this isolates the request path's own cost, and
 * a bare function given the same responder isolates the SDK's share of it.
 */
import { benchKey, branchItems } from './fixtures';

type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

/** Plain JSON → DynamoDB attribute values (enough for the fixtures: strings, numbers, booleans, lists, maps). */
const toAttribute = (value: Json): Record<string, unknown> => {
  if (typeof value === 'string') return { S: value };
  if (typeof value === 'number') return { N: String(value) };
  if (typeof value === 'boolean') return { BOOL: value };
  if (value === null) return { NULL: true };
  if (Array.isArray(value)) return { L: value.map(toAttribute) };
  return { M: toItem(value) };
};
const toItem = (item: { [key: string]: Json }) =>
  Object.fromEntries(Object.entries(item).map(([name, value]) => [name, toAttribute(value)]));

const decoder = new TextDecoder();
const encode = (body: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(body));
const itemBody = (item: object | undefined) => encode(item ? { Item: toItem(item as { [key: string]: Json }) } : {});
const queryBody = (items: object[]) =>
  encode({
    Items: items.map((item) => toItem(item as { [key: string]: Json })),
    Count: items.length,
    ScannedCount: items.length,
  });

interface HttpRequestLike {
  headers: Record<string, string>;
  body?: unknown;
}

export interface Responder {
  handle(request: HttpRequestLike): Promise<{ response: unknown }>;
  updateHttpClientConfig(): void;
  httpHandlerConfigs(): Record<string, never>;
  destroy(): void;
  metadata: { handlerProtocol: string };
  /** Calls answered, by operation. */
  readonly calls: Record<string, number>;
  /** Operations it could not answer: each one sent a request down an error path. */
  readonly unanswered: readonly string[];
}

/**
 * A responder for every call a request makes: the bench key is known (any other key hash gets no
 * item), the demo branch's items are served, the rate-limit counter's UpdateItem answers a count
 * of 1, PutItem succeeds. Anything else is an error, recorded in `unanswered`.
 */
export const createResponder = (keysTable: string): Responder => {
  const keysMarker = `"TableName":"${keysTable}"`;
  const bodies = {
    key: itemBody(benchKey.item),
    noItem: encode({}),
    branch: itemBody(branchItems.branch),
    members: queryBody(branchItems.members),
    providers: queryBody(branchItems.activeProviders),
    providerById: branchItems.activeProviders.map((item) => [`"${item.sk}"`, itemBody(item)] as const),
    put: encode({}),
    // The counter at the first call of its window: the limiter admits, as it would at low load.
    counted: encode({ Attributes: { count: { N: '1' } } }),
  };
  const calls: Record<string, number> = {};
  const unanswered: string[] = [];
  const answer = (operation: string, body: string): Uint8Array => {
    switch (operation) {
      case 'GetItem':
        if (body.includes(keysMarker)) return body.includes(benchKey.hash) ? bodies.key : bodies.noItem;
        if (body.includes('"PROVIDER#')) {
          return bodies.providerById.find(([sk]) => body.includes(sk))?.[1] ?? bodies.noItem;
        }
        return bodies.branch;
      case 'Query':
        return body.includes('"IndexName"') ? bodies.providers : bodies.members;
      case 'PutItem':
        return bodies.put;
      case 'UpdateItem':
        return bodies.counted;
      default:
        // The service would swallow this (fail open, usage error log): recorded so the bench fails.
        unanswered.push(operation);
        throw new Error(`The bench responder does not answer ${operation}`);
    }
  };
  return {
    calls,
    unanswered,
    metadata: { handlerProtocol: 'http/1.1' },
    updateHttpClientConfig: () => undefined,
    httpHandlerConfigs: () => ({}),
    destroy: () => undefined,
    handle: (request) => {
      const target = request.headers['x-amz-target'] ?? '';
      const operation = target.slice(target.indexOf('.') + 1);
      calls[operation] = (calls[operation] ?? 0) + 1;
      const raw = request.body;
      const body = typeof raw === 'string' ? raw : raw instanceof Uint8Array ? decoder.decode(raw) : String(raw ?? '');
      // A fresh copy per response: the SDK re-prototypes the body it is given.
      const payload = new Uint8Array(answer(operation, body));
      return Promise.resolve({
        response: {
          statusCode: 200,
          headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': 'bench' },
          body: payload,
        },
      });
    },
  };
};

/** Makes `client` (and every client built from the same DynamoDBClient) send through `responder`. */
export const useTransport = (client: { config: unknown }, responder: Responder): void => {
  (client.config as { requestHandler: unknown }).requestHandler = responder;
};
