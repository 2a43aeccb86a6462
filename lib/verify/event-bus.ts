/**
 * A stand-in EventBridge endpoint for the functions the verifier runs: it accepts every PutEvents
 * (so a function whose work waits on its event being sent, the key actions finisher, runs its
 * whole path) and keeps what was put. Which roles may put on which bus is checked from the
 * template (lib/verify/leak-scenario.ts).
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readBody } from '../local/forward';
import type { Json } from './assembly';

export interface EventBusStandIn {
  /** For AWS_ENDPOINT_URL_EVENTBRIDGE. */
  readonly endpoint: string;
  /** Every entry put, as sent. */
  readonly entries: Json[];
  close(): Promise<void>;
}

export const startEventBusStandIn = async (): Promise<EventBusStandIn> => {
  const entries: Json[] = [];
  const server = createServer(async (request, response) => {
    const put = (JSON.parse((await readBody(request)).toString('utf8') || '{}') as Json).Entries ?? [];
    entries.push(...put);
    response.writeHead(200, { 'content-type': 'application/x-amz-json-1.1' });
    response.end(
      JSON.stringify({
        FailedEntryCount: 0,
        Entries: put.map((_: unknown, i: number) => ({ EventId: `verify-${entries.length + i}` })),
      }),
    );
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    entries,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
};
