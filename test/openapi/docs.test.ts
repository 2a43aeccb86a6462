/** serveDocs (lib/local/docs.ts): the API document and an offline docs page, from this checkout. */
import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import fc from 'fast-check';
import { OPENAPI_FILE, serveDocs, THIS_SERVER } from '../../lib/local/docs';
import { startGateway, type Gateway } from '../../lib/local/gateway';
import { expectToMatchContract } from '../support/contract';

const BASE = 'http://127.0.0.1:3000/api';
/** serveDocs for a URL the browser would resolve, relative to the page at {base_url}/docs. */
const fetchFromPage = (reference: string) => {
  const url = new URL(reference, `${BASE}/docs`);
  expect(url.origin).toBe('http://127.0.0.1:3000');
  expect(url.pathname.startsWith('/api/')).toBe(true);
  return serveDocs(url.pathname.slice('/api'.length));
};

/** Names every plain object inherits: none of them is a file of the page. */
const PROTOTYPE_NAMES = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf', '__defineGetter__'];

const text = (body: string | Buffer | undefined) => (body === undefined ? '' : body.toString());

describe('serveDocs', () => {
  const committed = JSON.parse(readFileSync(OPENAPI_FILE, 'utf8')) as { servers: { url: string }[] };

  it('serves the committed document at /openapi.json, with the server it is served from first', () => {
    const res = serveDocs('/openapi.json');
    expect(res).toMatchObject({
      statusCode: 200,
      headers: {
        'Content-Type': 'application/json; charset=utf-8',
        'Cache-Control': 'no-store',
        'X-Content-Type-Options': 'nosniff',
      },
    });
    const served = JSON.parse(text(res?.body)) as typeof committed;
    const deployed = committed.servers.filter((server) => server.url.startsWith('https://'));
    expect(deployed).toHaveLength(1);
    expect(served).toEqual({ ...committed, servers: [{ url: '/api', description: 'This server' }, ...deployed] });
    expect(THIS_SERVER.url).toBe('/api');
    // Relative server URLs resolve against the document's URL (OpenAPI 3.1, 4.8.5): on any port, this origin.
    for (const origin of ['http://127.0.0.1:3000', 'http://127.0.0.1:49152', 'http://0.0.0.0:8080']) {
      expect(new URL(served.servers[0]!.url, `${origin}/api/openapi.json`).href).toBe(`${origin}/api`);
    }
  });

  it('describes its servers in plain text (Swagger UI shows no Markdown there)', () => {
    expect(JSON.stringify(committed.servers)).not.toContain('`');
  });

  it('serves an HTML page at /docs that loads only same-origin files', () => {
    const res = serveDocs('/docs');
    expect(res).toMatchObject({ statusCode: 200, headers: { 'Content-Type': 'text/html; charset=utf-8' } });
    expect(res?.headers['Content-Security-Policy']).toMatch(/default-src 'self'.*connect-src 'self'/);
    const html = text(res?.body);
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
    const references = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1] ?? '');
    expect(references.sort()).toEqual(
      [
        'docs/assets/favicon-32x32.png',
        'docs/assets/init.js',
        'docs/assets/swagger-ui-bundle.js',
        'docs/assets/swagger-ui.css',
        'openapi.json',
      ].sort(),
    );
    for (const reference of references)
      expect([reference, fetchFromPage(reference)?.statusCode]).toEqual([reference, 200]);
  });

  it('serves the Swagger UI files of the installed package with their types', () => {
    const bundle = serveDocs('/docs/assets/swagger-ui-bundle.js');
    expect(bundle?.headers['Content-Type']).toBe('text/javascript; charset=utf-8');
    expect(text(bundle?.body)).toContain('SwaggerUIBundle');
    expect(bundle?.body.length).toBeGreaterThan(500_000);
    expect(serveDocs('/docs/assets/swagger-ui.css')?.headers['Content-Type']).toBe('text/css; charset=utf-8');
    expect(serveDocs('/docs/assets/favicon-32x32.png')?.headers['Content-Type']).toBe('image/png');
  });

  it('starts Swagger UI on the served document, with the online validator off', () => {
    const init = text(serveDocs('/docs/assets/init.js')?.body);
    expect(init).toContain("url: 'openapi.json'");
    expect(init).toContain('validatorUrl: null');
    expect(init).not.toMatch(/https?:/);
    expect(new URL('openapi.json', `${BASE}/docs`).href).toBe(`${BASE}/openapi.json`);
  });

  it('redirects /docs/ to /docs so the relative links resolve', () => {
    expect(serveDocs('/docs/')).toMatchObject({ statusCode: 301, headers: { Location: '../docs' } });
    expect(new URL('../docs', `${BASE}/docs/`).href).toBe(`${BASE}/docs`);
  });

  it.each([
    '/v1/branch',
    '/openapi.yaml',
    '/docs/assets/index.html',
    '/docs/assets/../../package.json',
    '/docs/assets/%2e%2e/package.json',
    '/docs/assets/',
    '/docs/other',
    ...PROTOTYPE_NAMES.map((name) => `/docs/assets/${name}`),
  ])('leaves %s to the router', (path) => {
    expect(serveDocs(path)).toBeUndefined();
  });
});

describe('the docs paths through the local gateway', () => {
  let gateway: Gateway;
  beforeAll(async () => {
    gateway = await startGateway({ port: 0, staticFiles: serveDocs });
  });
  afterAll(() => gateway.close());

  /** A raw request on a fresh connection: the path goes on the wire exactly as given (fetch would normalise it). */
  const send = (method: string, path: string) =>
    new Promise<{ status: number; headers: Record<string, string>; body: string }>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port: gateway.port, method, path, agent: false }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers as Record<string, string>, body }),
        );
      });
      req.on('error', reject);
      req.end();
    });

  it.each(PROTOTYPE_NAMES)('answers /api/docs/assets/%s with the API 404, as any unknown path', async (name) => {
    const path = `/docs/assets/${name}`;
    const res = await send('GET', `/api${path}`);
    expect(res.status).toBe(404);
    expect(JSON.parse(res.body)).toEqual({
      error: { code: 'not_found', message: expect.any(String), request_id: res.headers['x-request-id'] },
    });
    expectToMatchContract({ method: 'GET', path, statusCode: res.status, headers: res.headers, body: res.body });
  });

  it('never answers a 5xx for any path under /api/docs and /api/docs/assets/', async () => {
    const segment = fc.oneof(
      fc.webSegment(),
      fc.constantFrom(...PROTOTYPE_NAMES, '', '.', '..', '%', '%zz', '%E0%A4%A', '%00', '%2e%2e', '%2F', 'init.js'),
      fc.string({ unit: 'binary', maxLength: 12 }).map(encodeURIComponent),
    );
    const path = fc
      .tuple(fc.constantFrom('/api/docs', '/api/docs/', '/api/docs/assets/'), fc.array(segment, { maxLength: 4 }))
      .map(([prefix, segments]) => prefix + segments.join('/'));
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('GET', 'HEAD'), path, async (method, target) => {
        const { status } = await send(method, target);
        expect([method, target, status < 500]).toEqual([method, target, true]);
      }),
      { numRuns: 300 },
    );
  });
});
