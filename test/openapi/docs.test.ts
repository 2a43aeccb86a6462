/** serveDocs (lib/local/docs.ts): the API document and an offline docs page, from this checkout. */
import { readFileSync } from 'node:fs';
import { OPENAPI_FILE, serveDocs } from '../../lib/local/docs';

const BASE = 'http://127.0.0.1:3000/api';
/** serveDocs for a URL the browser would resolve, relative to the page at {base_url}/docs. */
const fetchFromPage = (reference: string) => {
  const url = new URL(reference, `${BASE}/docs`);
  expect(url.origin).toBe('http://127.0.0.1:3000');
  expect(url.pathname.startsWith('/api/')).toBe(true);
  return serveDocs(url.pathname.slice('/api'.length));
};

const text = (body: string | Buffer | undefined) => (body === undefined ? '' : body.toString());

describe('serveDocs', () => {
  it('serves the committed document at /openapi.json', () => {
    const res = serveDocs('/openapi.json');
    expect(res).toMatchObject({
      statusCode: 200,
      headers: {
        'Content-Type': 'application/json; charset=utf-8',
        'Cache-Control': 'no-store',
        'X-Content-Type-Options': 'nosniff',
      },
    });
    expect(JSON.parse(text(res?.body))).toEqual(JSON.parse(readFileSync(OPENAPI_FILE, 'utf8')));
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
  ])('leaves %s to the router', (path) => {
    expect(serveDocs(path)).toBeUndefined();
  });
});
