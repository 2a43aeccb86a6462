/**
 * The SDK's transport to the embedded DynamoDB when both live in one process (`npm start`): each
 * request goes straight to dynalite's own request handler, with the request the SDK built and
 * signed, instead of through a socket and Node's HTTP stack on both sides. The profile of the
 * local stack put most of its CPU per request in those two HTTP stacks (docs/capacity.md "Local
 * stack"). Programs in other processes (the CLI, a test's client) still reach dynalite over HTTP.
 */
import { Readable } from 'node:stream';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

export type RequestListener = (request: IncomingMessage, response: ServerResponse) => void;

/** What the SDK hands a request handler (the fields of @smithy/protocol-http's HttpRequest read here). */
interface SdkRequest {
  method: string;
  path: string;
  query?: Record<string, string | string[] | null>;
  headers: Record<string, string>;
  body?: string | Uint8Array;
}
interface SdkResponse {
  statusCode: number;
  headers: Record<string, string>;
  body: Uint8Array;
}

const abortError = (signal: AbortSignal): Error =>
  signal.reason instanceof Error ? signal.reason : Object.assign(new Error('Request aborted'), { name: 'AbortError' });

const queryString = (query: SdkRequest['query']): string => {
  const pairs = Object.entries(query ?? {}).flatMap(([name, value]) =>
    (Array.isArray(value) ? value : [value]).map((one) =>
      one === null ? encodeURIComponent(name) : `${encodeURIComponent(name)}=${encodeURIComponent(one)}`,
    ),
  );
  return pairs.length > 0 ? `?${pairs.join('&')}` : '';
};

/** The request as dynalite's handler reads it: a readable body with method, url and lower-case headers. */
const incoming = (request: SdkRequest): IncomingMessage => {
  const { body: sent } = request;
  // A view on the SDK's bytes: Buffer.from(Uint8Array) would call the string methods the SDK's body warns about.
  const bytes =
    typeof sent === 'string' ? Buffer.from(sent) : sent && Buffer.from(sent.buffer, sent.byteOffset, sent.byteLength);
  const body = bytes ? [bytes] : [];
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) headers[name.toLowerCase()] = value;
  return Object.assign(Readable.from(body), {
    method: request.method,
    url: `${request.path}${queryString(request.query)}`,
    headers,
  }) as unknown as IncomingMessage;
};

/** The response side dynalite writes to (statusCode, setHeader, end); settles with the whole answer. */
const outgoing = (settle: (response: SdkResponse) => void): ServerResponse => {
  const headers: Record<string, string> = {};
  const response = {
    statusCode: 200,
    setHeader: (name: string, value: string | number) => {
      headers[name.toLowerCase()] = String(value);
      return response;
    },
    end: (data?: string | Uint8Array) => {
      settle({
        statusCode: response.statusCode,
        headers,
        body: data === undefined ? new Uint8Array() : Buffer.from(data),
      });
      return response;
    },
  };
  return response as unknown as ServerResponse;
};

/** What a call gets once the store is closed: what a closed port gives a socket (the SDK's "unavailable"). */
const closedError = (): Error =>
  Object.assign(new Error('The embedded DynamoDB is closed'), { name: 'Error', code: 'ECONNREFUSED' });

/**
 * An SDK request handler that answers from `listener` in this process while `isOpen()`; honours
 * the call's abort signal. `settled()` resolves once no call is in the store's hands: closing the
 * store under one made dynalite throw where nothing catches it ("Database is closed"), and the
 * process exited 1 on Ctrl-C (lib/local/dynamo.ts waits for it before closing).
 */
export const inProcessTransport = (listener: RequestListener, isOpen: () => boolean) => {
  let inFlight = 0;
  let waiting: (() => void)[] = [];
  const finished = () => {
    inFlight -= 1;
    if (inFlight > 0) return;
    for (const resolve of waiting) resolve();
    waiting = [];
  };
  return {
    metadata: { handlerProtocol: 'http/1.1' },
    handle: (request: SdkRequest, options: { abortSignal?: AbortSignal } = {}) =>
      new Promise<{ response: SdkResponse }>((resolve, reject) => {
        const { abortSignal } = options;
        // A closed store's callbacks throw where nothing can catch them: refuse before calling it.
        if (!isOpen()) return reject(closedError());
        if (abortSignal?.aborted) return reject(abortError(abortSignal));
        const onAbort = () => reject(abortError(abortSignal!));
        abortSignal?.addEventListener('abort', onAbort, { once: true });
        const answered = (): void => {
          finished();
          abortSignal?.removeEventListener('abort', onAbort);
        };
        inFlight += 1;
        try {
          listener(
            incoming(request),
            outgoing((response) => {
              // Counted until the store answers, even for a call its caller stopped waiting for.
              answered();
              resolve({ response });
            }),
          );
        } catch (error) {
          // Thrown before any answer: no longer in the store's hands, and a close must not wait for it.
          answered();
          reject(error as Error);
        }
      }),
    /** Resolves when no call is in the store's hands. */
    settled: (): Promise<void> =>
      inFlight === 0 ? Promise.resolve() : new Promise<void>((resolve) => waiting.push(resolve)),
    updateHttpClientConfig: () => undefined,
    httpHandlerConfigs: () => ({}),
    destroy: () => undefined,
  };
};

export type InProcessTransport = ReturnType<typeof inProcessTransport>;

/** What the SDK calls on its request handler, whatever request and response types the handler names. */
export interface SdkRequestHandler {
  handle: (request: never, options?: never) => Promise<{ response: unknown }>;
}

/**
 * Makes `client` (and every client built from the same DynamoDBClient) send through `transport`:
 * this one, or any SDK request handler (the bench's canned responder, bench/lib/responder.ts).
 */
export const useTransport = (client: DynamoDBDocumentClient, transport: SdkRequestHandler): void => {
  (client.config as { requestHandler: unknown }).requestHandler = transport;
};

/** The part of a client's configuration that says how requests are signed (@smithy/core's auth schemes). */
interface AuthSchemes {
  httpAuthSchemes: { schemeId: string; signer: unknown }[];
}

/** `20261127T063000Z`: SigV4's date format. */
const amzDate = (now: Date): string => now.toISOString().replace(/[-:]|\.\d{3}/g, '');

/**
 * Gives a request the headers of a SigV4 signature without computing it. The embedded store checks
 * that a request carries an Authorization header of that shape and a date, never the signature
 * itself (dynalite's index.js), so computing it was waste: the HMACs and hashes of the signing
 * were about a tenth of the local stack's CPU per request (docs/capacity.md "Local stack").
 */
const unsignedForEmbeddedStore = {
  sign: async <R extends { headers: Record<string, string> }>(request: R): Promise<R> => {
    const date = amzDate(new Date());
    request.headers['x-amz-date'] = date;
    request.headers.authorization = `AWS4-HMAC-SHA256 Credential=local/${date.slice(0, 8)}/local/dynamodb/aws4_request, SignedHeaders=host;x-amz-date, Signature=unsigned`;
    return request;
  },
};

/**
 * Makes `client` (and every client built from the same DynamoDBClient) reach the embedded store in
 * this process: through its transport, and without computing signatures the store never checks.
 */
export const useEmbeddedStore = (client: DynamoDBDocumentClient, transport: InProcessTransport): void => {
  useTransport(client, transport);
  const config = client.config as unknown as AuthSchemes;
  config.httpAuthSchemes = config.httpAuthSchemes.map((scheme) => ({ ...scheme, signer: unsignedForEmbeddedStore }));
};
