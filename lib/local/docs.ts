/**
 * The API document and a docs page, for the local gateway to serve under {base_url} without a
 * key: `/openapi.json` (the committed docs/openapi.json, this server first) and `/docs` (Swagger UI),
 * with the page's assets under `/docs/assets/`. Everything comes from this checkout and the
 * installed swagger-ui-dist package: no CDN, no network. The page's Content-Security-Policy
 * only allows this origin, so a browser would refuse to fetch anything from elsewhere.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { LOCAL_STAGE } from './events';
import type { StaticResponse } from './gateway';
import { OPENAPI_FILE, PROJECT_ROOT } from '../project-paths';

export { OPENAPI_FILE };

const swaggerUiDir = (): string =>
  dirname(createRequire(join(PROJECT_ROOT, 'package.json')).resolve('swagger-ui-dist/package.json'));

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * Files of swagger-ui-dist the page uses, by their name under /docs/assets/. A Map: a plain object
 * would answer `__proto__` or `constructor` from its prototype.
 */
const PACKAGE_ASSETS = new Map<string, string>([
  ['swagger-ui.css', 'text/css; charset=utf-8'],
  ['swagger-ui-bundle.js', 'text/javascript; charset=utf-8'],
  ['favicon-32x32.png', 'image/png'],
]);

/** Starts Swagger UI on the document; `openapi.json` resolves against /api/docs to /api/openapi.json. */
const INIT_SCRIPT = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: 'openapi.json',
    dom_id: '#swagger-ui',
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout',
    validatorUrl: null,
    defaultModelsExpandDepth: 1,
    displayRequestDuration: true,
  });
});
`;

const PAGE = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>Branch API reference</title>
    <link rel="stylesheet" href="docs/assets/swagger-ui.css" />
    <link rel="icon" type="image/png" href="docs/assets/favicon-32x32.png" />
  </head>
  <body>
    <div id="swagger-ui"></div>
    <noscript>This page needs JavaScript. The raw document is at <a href="openapi.json">openapi.json</a>.</noscript>
    <script src="docs/assets/swagger-ui-bundle.js"></script>
    <script src="docs/assets/init.js"></script>
  </body>
</html>
`;

const CSP = [
  "default-src 'self'",
  "img-src 'self' data:",
  "style-src 'self' 'unsafe-inline'",
  "script-src 'self'",
  "connect-src 'self'",
  "frame-ancestors 'none'",
].join('; ');

const respond = (body: string | Buffer, contentType: string, cacheControl = 'no-store'): StaticResponse => ({
  statusCode: 200,
  headers: { 'Content-Type': contentType, 'Cache-Control': cacheControl, 'X-Content-Type-Options': 'nosniff' },
  body,
});

const cache = new Map<string, Buffer>();
/** Reads a file once per process. */
const readOnce = (file: string): Buffer => cache.get(file) ?? cache.set(file, readFileSync(file)).get(file)!;

interface ServerObject {
  url: string;
  description?: string;
}

/** The server the page was loaded from: relative, so it resolves against the document's URL (OpenAPI 3.1, 4.8.5). */
export const THIS_SERVER: ServerObject = { url: `/${LOCAL_STAGE}`, description: 'This server' };

const isLoopbackServer = ({ url }: ServerObject): boolean => /^https?:\/\/(127\.0\.0\.1|localhost)[:/]/.test(url);

/**
 * The committed document with this server first, in place of the fixed local address it lists
 * (http://127.0.0.1:3000), so "Try it out" calls whatever port this gateway runs on and stays
 * within the page's `connect-src 'self'`. The deployed server entry stays.
 */
let served: Buffer | undefined;
const servedDocument = (): Buffer => {
  if (!served) {
    const document = JSON.parse(readOnce(OPENAPI_FILE).toString('utf8')) as { servers?: ServerObject[] };
    document.servers = [THIS_SERVER, ...(document.servers ?? []).filter((server) => !isLoopbackServer(server))];
    served = Buffer.from(`${JSON.stringify(document, null, 2)}\n`);
  }
  return served;
};

/**
 * Answers a GET for `pathWithinStage` (the path relative to {base_url}) when it is the document,
 * the docs page or one of its assets; undefined for anything else.
 */
export const serveDocs = (pathWithinStage: string): StaticResponse | undefined => {
  const path = pathWithinStage.split('?')[0] ?? '';
  if (path === '/openapi.json') return respond(servedDocument(), JSON_TYPE);
  if (path === '/docs') {
    const page = respond(PAGE, 'text/html; charset=utf-8');
    page.headers['Content-Security-Policy'] = CSP;
    return page;
  }
  // Relative links on the page need it at /docs, not /docs/.
  if (path === '/docs/') {
    return { statusCode: 301, headers: { Location: '../docs', 'Cache-Control': 'no-store' }, body: '' };
  }
  if (path === '/docs/assets/init.js') return respond(INIT_SCRIPT, 'text/javascript; charset=utf-8');
  const asset = path.startsWith('/docs/assets/') ? path.slice('/docs/assets/'.length) : undefined;
  const contentType = asset === undefined ? undefined : PACKAGE_ASSETS.get(asset);
  if (asset === undefined || contentType === undefined) return undefined;
  return respond(readOnce(join(swaggerUiDir(), asset)), contentType, 'public, max-age=3600');
};
