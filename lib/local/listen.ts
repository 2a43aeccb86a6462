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
  await Promise.race([
    once(server as Server, 'listening'),
    once(server as Server, 'error').then(([error]: NodeJS.ErrnoException[]) => {
      throw inUse && error?.code === 'EADDRINUSE' ? new Error(inUse, { cause: error }) : error;
    }),
  ]);
  return (server.address() as AddressInfo).port;
};
