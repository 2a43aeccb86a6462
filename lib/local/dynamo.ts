/**
 * The embedded DynamoDB (dynalite, in-process), for `npm start` and the tests. Its tables are
 * created by lib/operator/tables.ts, as on any other DynamoDB.
 *
 * dynalite checks no signature and answers CORS preflights with `Access-Control-Allow-Origin: *`,
 * so anything that can reach it can mint keys. It therefore listens on loopback only, whatever
 * HOST the API uses, and only serves clients that are not a browser page (docs/decisions.md,
 * "Embedded DynamoDB").
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { listen } from './listen';
import type dynaliteServer from 'dynalite';
import { createRequire } from 'node:module';
import { LOCAL_HOST } from '../local-defaults';
import { installStringStore, lastCreatedStore, storedData, type StoredData } from './string-store';
import { installWriteCapture, WRITE_OBSERVER, type DynaliteDb, type WriteObserver } from './write-capture';
import { inProcessTransport, type InProcessTransport, type RequestListener } from './in-process-transport';

type Dynalite = typeof dynaliteServer;

type MemoryLevelModule = Parameters<typeof installStringStore>[0];
// dynalite, its store and its db module from one module cache (Node's, also under jest), so the
// class swapped and the function hooked are the ones dynalite uses.
const requireHere = createRequire(import.meta.url);
const fromDynalite = (id: string): unknown => createRequire(requireHere.resolve('dynalite'))(id);

/** dynalite, its store made a string store (./string-store.ts), its writes observable (./write-capture.ts). */
const loadDynalite = (): Dynalite => {
  installStringStore(fromDynalite('memory-level') as MemoryLevelModule);
  installWriteCapture(fromDynalite('./db') as DynaliteDb);
  return requireHere('dynalite') as Dynalite;
};

export interface EmbeddedDynamo {
  /** `http://127.0.0.1:<port>` */
  endpoint: string;
  port: number;
  /**
   * Reports every write stored in one table, before its caller gets the answer (the change feed
   * inside the store, lib/local/write-capture.ts); one observer at a time. Returns the undo.
   */
  observeWrites(observer: WriteObserver): () => void;
  /** The SDK transport for clients in this process: no socket, dynalite's handler called directly. */
  transport: InProcessTransport;
  /** Requests served over HTTP (other processes' tools); this process's clients use `transport`. */
  httpRequests(): number;
  /** What the store holds (in memory only; undefined with a data directory): the benchmark's figure. */
  storedData(): Promise<StoredData | undefined>;
  close(): Promise<void>;
}
export interface EmbeddedDynamoOptions {
  /** 0 picks a free port. @default 0 */
  port?: number;
  /** Directory that keeps the data across restarts; in memory when absent. */
  dataDir?: string;
}

/** Always loopback: the store has no authentication of its own. */
export const EMBEDDED_DYNAMO_HOST = LOCAL_HOST;

/**
 * True for a request a browser page could have made or steered: one with an `Origin` header (every
 * cross-origin fetch and form post carries one), a CORS preflight (OPTIONS), or a `Host` other than
 * this listener's own loopback address, as after a DNS rebinding (`evil.example` resolving to
 * 127.0.0.1). The AWS SDK sends none of these.
 */
export const fromBrowser = (request: IncomingMessage, port: number): boolean => {
  if (request.headers.origin !== undefined || request.method === 'OPTIONS') return true;
  const host = request.headers.host;
  return host !== `${EMBEDDED_DYNAMO_HOST}:${port}` && host !== `localhost:${port}`;
};

export const refuse = (response: ServerResponse): void => {
  const body = 'Forbidden: the embedded DynamoDB serves local programs only\n';
  response.writeHead(403, {
    'Content-Type': 'text/plain; charset=utf-8',
    'Content-Length': String(Buffer.byteLength(body)),
    Connection: 'close',
  });
  response.end(body);
};

export const startEmbeddedDynamo = async (options: EmbeddedDynamoOptions = {}): Promise<EmbeddedDynamo> => {
  const dynalite = loadDynalite();
  // dynalite keeps this object as its store's options, where the write capture finds the observer.
  const storeOptions: Record<string | symbol, unknown> = {
    createTableMs: 0,
    deleteTableMs: 0,
    updateTableMs: 0,
    ...(options.dataDir ? { path: options.dataDir } : {}),
  };
  const server = dynalite(storeOptions);
  const memory = options.dataDir ? undefined : lastCreatedStore(fromDynalite('memory-level') as MemoryLevelModule);
  // dynalite's own handler: over HTTP only for requests that pass the guard; in-process as it is.
  const handlers = server.listeners('request') as RequestListener[];
  server.removeAllListeners('request');
  const serve: RequestListener = (request, response) => {
    for (const handler of handlers) handler(request, response);
  };
  // The port, once listening: read once, not per request (server.address() is a system call).
  let port = 0;
  let httpRequests = 0;
  let open = true;
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    httpRequests += 1;
    if (fromBrowser(request, port)) return refuse(response);
    serve(request, response);
  });
  const transport = inProcessTransport(serve, () => open);
  port = await listen(server, options.port ?? 0, EMBEDDED_DYNAMO_HOST);
  const { address } = server.address() as AddressInfo;
  return {
    endpoint: `http://${address}:${port}`,
    port,
    httpRequests: () => httpRequests,
    transport,
    storedData: async () => (memory ? storedData(memory) : undefined),
    observeWrites: (observer) => {
      if (storeOptions[WRITE_OBSERVER]) throw new Error('The embedded DynamoDB already has a write observer');
      storeOptions[WRITE_OBSERVER] = observer;
      return () => {
        if (storeOptions[WRITE_OBSERVER] === observer) delete storeOptions[WRITE_OBSERVER];
      };
    },
    close: async () => {
      open = false;
      // Calls already in the store's hands finish first: closing under one throws uncaught in dynalite.
      await transport.settled();
      await new Promise<void>((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      });
    },
  };
};
