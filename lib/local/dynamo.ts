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
import { installWriteCapture, WRITE_OBSERVER, type DynaliteDb, type WriteObserver } from './write-capture';

type Dynalite = typeof dynaliteServer;
type MemoryLevelClass = new (options?: Record<string, unknown>) => object;

/**
 * dynalite keeps its in-memory data in memory-level, whose default store encoding keeps every key
 * and value as a Buffer: a small one is a slice of Node's shared 8 KB allocation pool, and one
 * kept slice keeps its whole slab alive, so the store pinned every slab the process filled (HTTP
 * bodies, JSON, the SDK): `npm start` grew by about 18 KB per request. Owned copies still cost a
 * separate allocation per key and value (about 6 KB of RSS per call). With memory-level's `utf8`
 * store encoding, keys and values are plain strings on the heap: about what the data weighs
 * (docs/capacity.md "Local stack"). dynalite takes no store option, so the class it constructs is
 * swapped before dynalite is first loaded; its keys are ASCII, where string and byte order agree.
 */
const loadDynalite = (): Dynalite => {
  // dynalite, its store and its db module from one module cache (Node's, also under jest), so
  // the classes swapped and the functions hooked here are the ones dynalite uses.
  const requireHere = createRequire(import.meta.url);
  const fromDynalite = createRequire(requireHere.resolve('dynalite'));
  const memoryLevel = fromDynalite('memory-level') as { MemoryLevel: MemoryLevelClass & { stringStore?: true } };
  if (!memoryLevel.MemoryLevel.stringStore) {
    const Original = memoryLevel.MemoryLevel;
    class StringStore extends Original {
      static override readonly stringStore = true as const;
      constructor(options: Record<string, unknown> = {}) {
        super({ storeEncoding: 'utf8', ...options });
      }
    }
    memoryLevel.MemoryLevel = StringStore;
  }
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

type RequestListener = (request: IncomingMessage, response: ServerResponse) => void;

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
  // dynalite's own handler runs only for requests that pass the guard.
  const handlers = server.listeners('request') as RequestListener[];
  server.removeAllListeners('request');
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    if (fromBrowser(request, (server.address() as AddressInfo).port)) return refuse(response);
    for (const handler of handlers) handler(request, response);
  });
  const port = await listen(server, options.port ?? 0, EMBEDDED_DYNAMO_HOST);
  const { address } = server.address() as AddressInfo;
  return {
    endpoint: `http://${address}:${port}`,
    port,
    observeWrites: (observer) => {
      if (storeOptions[WRITE_OBSERVER]) throw new Error('The embedded DynamoDB already has a write observer');
      storeOptions[WRITE_OBSERVER] = observer;
      return () => {
        if (storeOptions[WRITE_OBSERVER] === observer) delete storeOptions[WRITE_OBSERVER];
      };
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
};
