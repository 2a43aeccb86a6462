/**
 * The bare HTTP harness the local gateway is compared with: a node:http server that makes, for
 * the same paths, the same SDK calls as the service (bench/lib/bare.ts) through a client
 * configured as the handlers' is, with no handler, Middy or middleware around them. The key is
 * looked up by BENCH_KEY_HASH, the hash of the bench key.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readDynamoDbSettings, readTableNames } from '../../shared/lambda/config';
import { createDocumentClient } from '../../shared/data/dynamodb';
import { createBareRequest } from '../lib/bare';
import { serveParent } from '../lib/child';

const bareRequest = createBareRequest(
  createDocumentClient(readDynamoDbSettings(process.env)),
  readTableNames(process.env),
);
const keyHash = process.env.BENCH_KEY_HASH!;
const STAGE = '/api';

const server = createServer((request, response) => {
  const rawPath = request.url ?? '/';
  bareRequest(rawPath.slice(STAGE.length), rawPath, keyHash, randomUUID()).then(
    (body) => {
      response.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
      response.end(body);
    },
    () => response.writeHead(500).end(),
  );
});
server.keepAliveTimeout = 5_000;
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  serveParent({ baseUrl: `http://127.0.0.1:${port}${STAGE}` });
});
