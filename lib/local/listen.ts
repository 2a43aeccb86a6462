import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Starts listening; resolves with the port (0 picks a free one), rejects with the listen error (EADDRINUSE). */
export const listen = async (server: Pick<Server, 'listen' | 'address' | 'once'>, port: number, host: string) => {
  server.listen(port, host);
  await Promise.race([
    once(server as Server, 'listening'),
    once(server as Server, 'error').then(([error]) => {
      throw error;
    }),
  ]);
  return (server.address() as AddressInfo).port;
};
