/**
 * The embedded DynamoDB (lib/local/dynamo.ts) answers local programs only: it listens on loopback
 * whatever HOST the API uses, and refuses what a web page could send it (a request with an Origin,
 * a CORS preflight, a foreign Host after DNS rebinding), while the AWS SDK keeps working. On disk
 * it runs in a worker thread behind a private Unix socket.
 */
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateTableCommand, DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { startEmbeddedDynamo, type EmbeddedDynamo } from '../../lib/local/dynamo';
import { startLocalEnvironment } from '../../lib/local/environment';

let dynamo: EmbeddedDynamo;
beforeAll(async () => {
  dynamo = await startEmbeddedDynamo();
});
afterAll(() => dynamo.close());

/** What a page's `fetch(endpoint, { method: 'POST', body })` to DynamoDB would send, minus the browser. */
const LIST_TABLES = {
  'Content-Type': 'application/x-amz-json-1.0',
  'X-Amz-Target': 'DynamoDB_20120810.ListTables',
  // Any signature will do: dynalite checks none.
  'X-Amz-Date': '20260101T000000Z',
  Authorization: 'AWS4-HMAC-SHA256 Credential=x/20260101/local/dynamodb/aws4_request, SignedHeaders=host, Signature=0',
};

interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A raw HTTP request, so the Host header can be anything (fetch always sends the URL's). */
const send = (method: string, headers: Record<string, string>, body = ''): Promise<RawResponse> =>
  new Promise((resolve, reject) => {
    const req = httpRequest(dynamo.endpoint, { method, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });

const corsHeadersOf = (response: RawResponse) =>
  Object.keys(response.headers).filter((name) => name.startsWith('access-control-'));

it('listens on 127.0.0.1 and serves the AWS SDK', async () => {
  expect(dynamo.endpoint).toBe(`http://127.0.0.1:${dynamo.port}`);
  const client = new DynamoDBClient({
    endpoint: dynamo.endpoint,
    region: 'local',
    credentials: { accessKeyId: 'any', secretAccessKey: 'any' },
  });
  try {
    expect((await client.send(new ListTablesCommand({}))).TableNames).toEqual([]);
  } finally {
    client.destroy();
  }
  // The same request by hand, with the Host the SDK sends: served.
  const ok = await send('POST', { ...LIST_TABLES, Host: `127.0.0.1:${dynamo.port}` }, '{}');
  expect([ok.status, JSON.parse(ok.body)]).toEqual([200, { TableNames: [] }]);
  const byName = await send('POST', { ...LIST_TABLES, Host: `localhost:${dynamo.port}` }, '{}');
  expect(byName.status).toBe(200);
});

it('refuses a request from a web page (it carries an Origin), with no CORS headers', async () => {
  for (const origin of ['http://evil.example', 'null', `http://127.0.0.1:${dynamo.port}`]) {
    const refused = await send('POST', { ...LIST_TABLES, Host: `127.0.0.1:${dynamo.port}`, Origin: origin }, '{}');
    expect([origin, refused.status, corsHeadersOf(refused)]).toEqual([origin, 403, []]);
    expect(refused.body).not.toContain('TableNames');
  }
  // The same through fetch, as a page's script would send it.
  const fetched = await fetch(dynamo.endpoint, {
    method: 'POST',
    headers: { ...LIST_TABLES, Origin: 'http://evil.example' },
    body: '{}',
  });
  expect(fetched.status).toBe(403);
  expect(fetched.headers.get('access-control-allow-origin')).toBeNull();
});

it('refuses every CORS preflight (OPTIONS), with or without an Origin', async () => {
  const preflight = await send('OPTIONS', {
    Host: `127.0.0.1:${dynamo.port}`,
    Origin: 'http://evil.example',
    'Access-Control-Request-Method': 'POST',
    'Access-Control-Request-Headers': 'content-type,x-amz-target,authorization',
  });
  expect([preflight.status, corsHeadersOf(preflight)]).toEqual([403, []]);
  const bare = await send('OPTIONS', { Host: `127.0.0.1:${dynamo.port}` });
  expect([bare.status, corsHeadersOf(bare)]).toEqual([403, []]);
});

it('refuses a foreign Host (a DNS-rebound name, another port)', async () => {
  for (const host of [`evil.example:${dynamo.port}`, 'evil.example', `127.0.0.1:${dynamo.port + 1}`, '127.0.0.1']) {
    const refused = await send('POST', { ...LIST_TABLES, Host: host }, '{}');
    expect([host, refused.status]).toEqual([host, 403]);
  }
});

describe('in the local environment with HOST=0.0.0.0', () => {
  const saved = { ...process.env };
  afterAll(() => {
    process.env = saved;
  });

  it('the API listens on every interface, the DynamoDB still on 127.0.0.1 only', async () => {
    const environment = await startLocalEnvironment({ host: '0.0.0.0', port: 0, dynamoPort: 0 });
    try {
      expect(environment.gateway.server.address()).toMatchObject({ address: '0.0.0.0' });
      const endpoint = new URL(environment.dynamoEndpoint);
      expect(endpoint.hostname).toBe('127.0.0.1');
      // On an address of this machine other than loopback, nothing answers on DynamoDB's port.
      const external = Object.values(networkInterfaces())
        .flat()
        .find((one) => one && one.family === 'IPv4' && !one.internal);
      if (external) {
        const outcome = await new Promise<string>((resolve) => {
          const socket = connect(Number(endpoint.port), external.address);
          socket.on('connect', () => {
            socket.destroy();
            resolve('connected');
          });
          socket.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
        });
        expect(outcome).toBe('ECONNREFUSED');
      } else {
        console.warn('No non-loopback IPv4 interface here: only the bound address was checked');
      }
    } finally {
      await environment.close();
    }
  });
});

describe('on disk (a worker thread of its own)', () => {
  it('keeps its data across a close, serves the SDK through the same guard, and its socket is private', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'embedded-dynamo-'));
    const before = new Set(await readdir(tmpdir()));
    try {
      const first = await startEmbeddedDynamo({ dataDir });
      const created = (await readdir(tmpdir())).filter(
        (name) => !before.has(name) && name.startsWith('branch-api-store-'),
      );
      expect(created).toHaveLength(1);
      // The worker's socket: in a folder no other user may enter.
      expect((await stat(join(tmpdir(), created[0]!))).mode & 0o777).toBe(0o700);
      const client = (endpoint: string) =>
        new DynamoDBClient({ endpoint, region: 'local', credentials: { accessKeyId: 'any', secretAccessKey: 'any' } });
      const one = client(first.endpoint);
      await one.send(
        new CreateTableCommand({
          TableName: 'kept',
          KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
          AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
          BillingMode: 'PAY_PER_REQUEST',
        }),
      );
      one.destroy();
      const refused = await fetch(first.endpoint, {
        method: 'POST',
        headers: { ...LIST_TABLES, Origin: 'http://evil.example' },
        body: '{}',
      });
      expect(refused.status).toBe(403);
      await first.close();
      expect(await readdir(tmpdir())).not.toContain(created[0]);

      const second = await startEmbeddedDynamo({ dataDir });
      const two = client(second.endpoint);
      try {
        expect((await two.send(new ListTablesCommand({}))).TableNames).toEqual(['kept']);
      } finally {
        two.destroy();
        await second.close();
      }
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
