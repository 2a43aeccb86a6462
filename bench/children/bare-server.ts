/**
 * What the local gateway is compared with: a node:http server making, for the same paths, the
 * same DynamoDB calls as the service (bench/lib/bare.ts) through a client configured as the
 * handlers' is. The key is looked up by BENCH_KEY_HASH. With BENCH_ONE_READ=<branch id>, it makes
 * the data read alone (the depth part's handler with one read). Sends its base URL.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createDocumentClient } from '../../shared/data/dynamodb';
import { readDynamoDbSettings, readTableNames } from '../../shared/config/env';
import { createBareRead, createBareRequest } from '../lib/bare';

const client = createDocumentClient(readDynamoDbSettings(process.env));
const tables = readTableNames(process.env);
const bareRequest = createBareRequest(client, tables);
const bareRead = createBareRead(client, tables);
const keyHash = process.env.BENCH_KEY_HASH!;
const oneRead = process.env.BENCH_ONE_READ;
const STAGE = '/api';

const server = createServer((request, response) => {
  const rawPath = request.url ?? '/';
  const path = rawPath.slice(STAGE.length);
  const answer = oneRead
    ? bareRead(path, oneRead).then((data) => JSON.stringify(data))
    : bareRequest(path, rawPath, keyHash, randomUUID(), request.socket.remoteAddress);
  answer.then(
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
