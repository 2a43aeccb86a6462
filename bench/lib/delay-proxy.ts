/**
 * A fixed delay in front of the embedded DynamoDB: every request waits `delayMs` before it is
 * forwarded, as each call to a remote DynamoDB waits its round trip. The depth part
 * (bench/parts/depth.ts) reads how many such waits a call adds up.
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { forwardRequest, readBody } from '../../lib/local/forward';

export const startDelayProxy = async (upstream: string) => {
  const target = new URL(upstream);
  let delayMs = 0;
  const server = createServer((request, response) => {
    readBody(request).then(
      async (body) => {
        if (delayMs > 0) await sleep(delayMs);
        forwardRequest(target, request, response, body);
      },
      () => response.destroy(),
    );
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    setDelay: (ms: number) => void (delayMs = ms),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
};
