/**
 * The local gateway in-process: real HTTP requests become API Gateway v2 events for the same
 * handlers, routed by the shared route table; unmatched requests get the catch-all function.
 */
import { Agent, request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { MAX_REQUEST_BODY_BYTES, startGateway, type Gateway } from '../../lib/local/gateway';
import { MAX_REQUEST_HEADER_BYTES } from '../../shared/api/http/request-limits';
import { MAX_REPORT_BYTES } from '../../shared/domain/secret-scanning';
import { expectToMatchContract } from '../support/contract';
import { mainBranch } from '../support/fixtures';
import { createKey, createTables, seedBranches, usageRecordFor } from '../support/harness';

let gateway: Gateway;
let key: string;

beforeAll(async () => {
  await createTables();
  await seedBranches();
  ({ key } = await createKey());
  gateway = await startGateway({ port: 0 });
});
afterAll(() => gateway.close());

/** A request through the gateway; every response must match the OpenAPI document. */
const get = async (path: string, init: RequestInit = {}) => {
  const response = await fetch(`${gateway.baseUrl}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${key}`, ...(init.headers as Record<string, string>) },
  });
  expectToMatchContract({
    method: init.method ?? 'GET',
    path,
    statusCode: response.status,
    headers: Object.fromEntries(response.headers),
    body: await response.clone().text(),
  });
  return response;
};

const expectError = async (response: Response, status: number, code: string) => {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
  expect(response.headers.get('cache-control')).toBe('no-store');
  expect(response.headers.get('x-content-type-options')).toBe('nosniff');
  const body = await response.json();
  expect(body).toEqual({
    error: { code, message: expect.any(String), request_id: response.headers.get('x-request-id') },
  });
};

it('serves each route with the stage prefix in the recorded path', async () => {
  const response = await get('/v1/branch');
  expect(response.status).toBe(200);
  expect(((await response.json()) as { id: string }).id).toBe(mainBranch.id);
  const record = await usageRecordFor(response.headers.get('x-request-id')!);
  expect(record).toMatchObject({ method: 'GET', path: '/api/v1/branch', route: 'GET /v1/branch', status: 200 });
});

it('decodes path parameters as API Gateway does', async () => {
  const response = await get('/v1/payment-providers/pp%5Fstripe');
  expect(response.status).toBe(200);
  expect(((await response.json()) as { id: string }).id).toBe('pp_stripe');
});

it.each(['/v1/nope', '/v2/branch', '/v1/branch/', '/v1/payment-providers/a%2F..%2Fb', '/v1/payment-providers/a/b'])(
  'answers %s with a JSON 404',
  async (path) => {
    await expectError(await get(path), 404, 'not_found');
  },
);

it('answers a path outside the stage with a JSON 404', async () => {
  const response = await fetch(`${gateway.baseUrl.replace(/\/api$/, '')}/v1/branch`);
  await expectError(response, 404, 'not_found');
});

it.each(['POST', 'PUT', 'PATCH', 'DELETE'])('answers %s on a known path with 405 and Allow: GET', async (method) => {
  const response = await get('/v1/members', { method });
  expect(response.headers.get('allow')).toBe('GET');
  await expectError(response, 405, 'method_not_allowed');
});

it('joins repeated query parameters, so a repeated limit is a 400', async () => {
  await expectError(await get('/v1/members?limit=1&limit=2'), 400, 'invalid_request');
});

it('joins repeated Authorization headers as API Gateway does, which is never a valid key', async () => {
  const status = await new Promise<number>((resolve, reject) => {
    const req = httpRequest(`${gateway.baseUrl}/v1/branch`, {
      // Raw header list: two Authorization lines.
      headers: ['host', '127.0.0.1', 'authorization', `Bearer ${key}`, 'authorization', `Bearer ${key}`],
    });
    req.on('response', (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
  expect(status).toBe(401);
});

describe('request headers over API Gateway’s bound (MAX_REQUEST_HEADER_BYTES)', () => {
  /** Raw bytes in, raw bytes out: what any client would read. */
  const exchange = (request: string) =>
    new Promise<string>((resolve, reject) => {
      const socket = connect(gateway.port, '127.0.0.1', () => socket.end(request));
      let answer = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => (answer += chunk));
      socket.on('end', () => resolve(answer));
      socket.on('error', reject);
    });

  /** The same, written in chunks of 500 bytes, each after the answer to what came before could start. */
  const exchangeSlowly = (request: string) =>
    new Promise<string>((resolve, reject) => {
      const socket = connect(gateway.port, '127.0.0.1', async () => {
        for (let at = 0; at < request.length; at += 500) {
          socket.write(request.slice(at, at + 500));
          await new Promise((wait) => setImmediate(wait));
        }
      });
      let answer = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => (answer += chunk));
      socket.on('end', () => resolve(answer));
      socket.on('error', reject);
    });

  it('a 20 KB bearer token is a 431 headers_too_large in the API’s error shape', async () => {
    const token = `wsk_${'a'.repeat(20 * 1024)}`;
    const answer = await exchange(`GET /api/v1/branch HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n\r\n`);
    const [head = '', body = ''] = answer.split('\r\n\r\n');
    expect(head.split('\r\n')[0]).toBe('HTTP/1.1 431 Request Header Fields Too Large');
    expect(head).toContain('Content-Type: application/json; charset=utf-8');
    const requestId = /X-Request-Id: (\S+)/.exec(head)?.[1];
    expect(JSON.parse(body)).toEqual({
      error: { code: 'headers_too_large', message: expect.stringMatching(/10240 bytes/), request_id: requestId },
    });
  });

  it('counts raw bytes, whitespace too: a 14 KB padded Authorization is a 431 and reaches no function', async () => {
    const padded = `Authorization:${' '.repeat(14 * 1024)}Bearer ${key}`;
    const answer = await exchange(`GET /api/v1/branch HTTP/1.1\r\nHost: x\r\n${padded}\r\n\r\n`);
    expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 431 Request Header Fields Too Large');
    // Spread over several lines, and sent a byte at a time: the same count.
    const lines = Array.from({ length: 12 }, (_, i) => `X-Pad-${i}:${'\t'.repeat(1000)}x`).join('\r\n');
    const slow = await exchangeSlowly(`GET /api/v1/branch HTTP/1.1\r\nHost: x\r\n${lines}\r\n\r\n`);
    expect(slow.split('\r\n')[0]).toBe('HTTP/1.1 431 Request Header Fields Too Large');
    // One connection's requests under the bound are each counted from zero: 3 × 4 KB are served.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const sockets = new Set<unknown>();
    for (let i = 0; i < 3; i += 1) {
      const status = await new Promise<number>((resolve, reject) => {
        const req = httpRequest(`${gateway.baseUrl}/v1/branch`, {
          agent,
          headers: { authorization: `Bearer ${key}`, 'x-pad': 'p'.repeat(4096) },
        });
        req.on('socket', (socket) => sockets.add(socket));
        req.on('response', (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', reject);
        req.end();
      });
      expect(status).toBe(200);
    }
    expect(sockets.size).toBe(1);
    agent.destroy();
  });

  it('headers just under the bound reach the function: a long token is 401 invalid_api_key', async () => {
    const token = `wsk_${'a'.repeat(MAX_REQUEST_HEADER_BYTES - 200)}`;
    await expectError(
      await get('/v1/branch', { headers: { authorization: `Bearer ${token}` } }),
      401,
      'invalid_api_key',
    );
  });

  it('other malformed requests keep Node’s bare 400', async () => {
    expect((await exchange('NOT HTTP\r\n\r\n')).split('\r\n')[0]).toBe('HTTP/1.1 400 Bad Request');
  });
});

describe('request bodies', () => {
  const post = (body: string | Buffer) =>
    get('/security/secret-scanning', { method: 'POST', body, headers: { 'content-type': 'application/json' } });

  it('reach the function: a report over 1 MB is its 413, an unsigned one its 401', async () => {
    await expectError(await post('x'.repeat(MAX_REPORT_BYTES + 1)), 413, 'payload_too_large');
    await expectError(await post('[]'), 401, 'invalid_signature');
  });

  it('are read up to API Gateway’s 10 MB: past it, the gateway itself answers 413 payload_too_large', async () => {
    await expectError(await post(Buffer.alloc(MAX_REQUEST_BODY_BYTES + 1, 0x20)), 413, 'payload_too_large');
  });

  it('a GET to the report path is 405 with Allow: POST', async () => {
    const response = await get('/security/secret-scanning');
    expect(response.headers.get('allow')).toBe('POST');
    await expectError(response, 405, 'method_not_allowed');
  });
});
