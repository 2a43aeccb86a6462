import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Starts listening; resolves with the port (0 picks a free one), rejects with the listen error, or
 * with `inUse` as its message when the port is taken (EADDRINUSE).
 */
export const listen = async (
  server: Pick<Server, 'listen' | 'address' | 'once'>,
  port: number,
  host: string,
  inUse?: string,
) => {
  server.listen(port, host);
  // `once` rejects with the error the server emits while it waits (EADDRINUSE).
  await once(server as Server, 'listening').catch((error: NodeJS.ErrnoException) => {
    throw inUse && error.code === 'EADDRINUSE' ? new Error(inUse, { cause: error }) : error;
  });
  return (server.address() as AddressInfo).port;
};
