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
import dynalite from 'dynalite';
import { createRequire } from 'node:module';

interface StoreOperation {
  type: string;
  key: unknown;
  value?: unknown;
}
interface MemoryLevelPrototype {
  _put(key: unknown, value: unknown, options: unknown): Promise<void>;
  _batch(operations: StoreOperation[], options: unknown): Promise<void>;
}

/** A Buffer that owns its memory: a small Buffer is a slice of a shared 8 KB pool slab. */
const unpooled = (value: unknown): unknown => {
  if (!Buffer.isBuffer(value) || value.byteLength === value.buffer.byteLength) return value;
  const own = Buffer.allocUnsafeSlow(value.byteLength);
  value.copy(own);
  return own;
};

/**
 * dynalite keeps its in-memory data in memory-level, which stores every key and value as the
 * Buffer its encoder made: for a small item, a slice of Node's shared 8 KB allocation pool. One
 * kept slice keeps its whole slab alive, so the store pinned every slab the process filled (HTTP
 * bodies, JSON, the SDK): `npm start` grew by about 18 KB per request, in arrayBuffers
 * (docs/capacity.md "Local stack"). Stored copies own exactly their bytes. Patched once, on the
 * memory-level dynalite itself loads.
 */
const storeOwnedBuffers = (): void => {
  const load = createRequire(createRequire(import.meta.url).resolve('dynalite'));
  const { MemoryLevel } = load('memory-level') as { MemoryLevel: { prototype: MemoryLevelPrototype } };
  const proto = MemoryLevel.prototype as MemoryLevelPrototype & { ownedBuffers?: true };
  if (proto.ownedBuffers) return;
  const { _put: put, _batch: batch } = proto;
  proto._put = function (key, value, options) {
    return put.call(this, unpooled(key), unpooled(value), options);
  };
  proto._batch = function (operations, options) {
    const owned = operations.map((op) => ({ ...op, key: unpooled(op.key), value: unpooled(op.value) }));
    return batch.call(this, owned, options);
  };
  proto.ownedBuffers = true;
};

export interface EmbeddedDynamo {
  /** `http://127.0.0.1:<port>` */
  endpoint: string;
  port: number;
  close(): Promise<void>;
}

export interface EmbeddedDynamoOptions {
  /** 0 picks a free port. @default 0 */
  port?: number;
  /** Directory that keeps the data across restarts; in memory when absent. */
  dataDir?: string;
}

/** Always loopback: the store has no authentication of its own. */
export const EMBEDDED_DYNAMO_HOST = '127.0.0.1';

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
  storeOwnedBuffers();
  const server = dynalite({
    createTableMs: 0,
    deleteTableMs: 0,
    updateTableMs: 0,
    ...(options.dataDir ? { path: options.dataDir } : {}),
  });
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
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
};
