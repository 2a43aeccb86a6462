/** A stand-in EventBridge endpoint for tests: the real SDK client speaks HTTP to it. */
import { createServer, type IncomingMessage } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { readBody } from '../../lib/local/forward';

/** A stand-in EventBridge endpoint for the real SDK client: answers each PutEvents as `answer` says. */
export const eventBridgeEndpoint = async (
  answer: (call: number, entries: unknown[]) => { status: number; body: unknown },
) => {
  const calls: Array<Record<string, any>[]> = [];
  const server = createServer(async (request: IncomingMessage, response) => {
    const entries = JSON.parse((await readBody(request)).toString('utf8')).Entries as Record<string, any>[];
    calls.push(entries);
    const { status, body } = answer(calls.length, entries);
    response.writeHead(status, { 'content-type': 'application/x-amz-json-1.1' });
    response.end(JSON.stringify(body));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  /** For the SDK's own clients too: AWS_ENDPOINT_URL_EVENTBRIDGE. */
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const client = new EventBridgeClient({
    endpoint,
    region: 'local',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });
  return { client, endpoint, calls, close: () => new Promise((resolve) => server.close(resolve)) };
};
