/**
 * The embedded DynamoDB (dynalite, in-process), for `npm start` and the tests. Its tables are
 * created by lib/operator/tables.ts, as on any other DynamoDB.
 *
 * dynalite checks no signature and answers CORS preflights with `Access-Control-Allow-Origin: *`,
 * so anything that can reach it can mint keys. It therefore listens on loopback only, whatever
 * HOST the API uses, and only serves clients that are not a browser page (docs/decisions.md,
 * "Embedded DynamoDB").
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import dynalite from 'dynalite';
import { openDiskStore } from './disk-store';
import { listen } from './listen';
import { LOCAL_HOST } from '../local-defaults';

export type EmbeddedDynamo = Awaited<ReturnType<typeof startEmbeddedDynamo>>;

export interface EmbeddedDynamoOptions {
  /** 0 picks a free port. @default 0 */
  port?: number;
  /**
   * Directory of the store (LevelDB, dynalite's `path`, in a worker thread: ./disk-store.ts): the
   * data stays there across restarts. In memory when absent (docs/decisions.md "Local store and change feed").
   */
  dataDir?: string;
  /** Told when the store on disk stops serving (a full disk) and when it serves again. */
  onNotice?: (message: string) => void;
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

export const startEmbeddedDynamo = async (options: EmbeddedDynamoOptions = {}) => {
  const onDisk = options.dataDir
    ? await openDiskStore(options.dataDir, options.onNotice ?? (() => undefined))
    : undefined;
  // In memory nothing can fail to write: dynalite's own handler, in this thread.
  const serve: (request: IncomingMessage, response: ServerResponse) => void =
    onDisk?.serve ??
    (dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 }).listeners('request')[0] as typeof serve);
  let port = 0;
  const server = createServer((request, response) =>
    fromBrowser(request, port) ? refuse(response) : serve(request, response),
  );
  try {
    port = await listen(server, options.port ?? 0, EMBEDDED_DYNAMO_HOST);
  } catch (error) {
    await onDisk?.close();
    throw error;
  }
  const { address } = server.address() as AddressInfo;
  return {
    /** `http://127.0.0.1:<port>` */
    endpoint: `http://${address}:${port}`,
    port,
    /**
     * The store's own handler, without the listener's guard: for a proxy in this process that
     * applies the same guard, so a request it passes on costs no second exchange over TCP.
     */
    serve,
    /** True while the store can't serve (only one on disk ever is: ./disk-store.ts). */
    down: () => onDisk?.down() ?? false,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await onDisk?.close();
    },
  };
};
