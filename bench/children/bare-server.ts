/**
 * What the local gateway is compared with: a node:http server making, for the same paths, the
 * same DynamoDB calls as the service (bench/lib/bare.ts) through a client configured as the
 * handlers' is. The key is looked up by BENCH_KEY_HASH. Sends its base URL.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createDocumentClient } from '../../shared/data/dynamodb';
import { readDynamoDbSettings, readTableNames } from '../../shared/config/env';
import { createBareRequest } from '../lib/bare';

const bareRequest = createBareRequest(
  createDocumentClient(readDynamoDbSettings(process.env)),
  readTableNames(process.env),
);
const keyHash = process.env.BENCH_KEY_HASH!;
const STAGE = '/api';

const server = createServer((request, response) => {
  const rawPath = request.url ?? '/';
  bareRequest(rawPath.slice(STAGE.length), rawPath, keyHash, randomUUID(), request.socket.remoteAddress).then(
    (body) => {
      response.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
      response.end(body);
    },
    () => response.writeHead(500).end(),
  );
});
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  process.send?.({ baseUrl: `http://127.0.0.1:${port}${STAGE}` });
});
process.on('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
