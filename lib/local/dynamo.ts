/**
 * The embedded DynamoDB (dynalite, in-process), for `npm start` and the tests. Its tables are
 * created by lib/operator/tables.ts, as on any other DynamoDB.
 */
import { listen } from './listen';
import dynalite from 'dynalite';

export interface EmbeddedDynamo {
  endpoint: string;
  port: number;
  close(): Promise<void>;
}

export interface EmbeddedDynamoOptions {
  /** 0 picks a free port. @default 0 */
  port?: number;
  /** @default '127.0.0.1' */
  host?: string;
  /** Directory that keeps the data across restarts; in memory when absent. */
  dataDir?: string;
}

export const startEmbeddedDynamo = async (options: EmbeddedDynamoOptions = {}): Promise<EmbeddedDynamo> => {
  const host = options.host ?? '127.0.0.1';
  const server = dynalite({
    createTableMs: 0,
    deleteTableMs: 0,
    updateTableMs: 0,
    ...(options.dataDir ? { path: options.dataDir } : {}),
  });
  const port = await listen(server, options.port ?? 0, host);
  return {
    endpoint: `http://${host}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
};
