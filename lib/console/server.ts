/**
 * The settings console: the branch's "API keys", "API usage" and "Activity" pages over the
 * operator library, a Hono app on @hono/node-server (docs/console.md "Routes"). `startConsole`
 * serves it and returns the URL to open, with its launch token.
 *
 * Every request passes the middleware below in order (security headers, Host, assets, launch
 * link, session and path; for a POST, same origin, form and CSRF token), then the routes.
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { getRequestListener } from '@hono/node-server';
import { serveStatic } from '@hono/node-server/serve-static';
import { Hono, type MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { setCookie } from 'hono/cookie';
import { csrf } from 'hono/csrf';
import { HTTPException } from 'hono/http-exception';
import { secureHeaders } from 'hono/secure-headers';
import { timingSafeEqual } from 'hono/utils/buffer';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { DataStoreError, DataStoreUnavailableError } from '../../shared/data/data-store-errors';
import { InvalidUsagePositionError } from '../../shared/data/repositories/usage';
import { createOperatorContext, type OperatorContext } from '../operator/context';
import { OperatorError, type OperatorErrorCode } from '../operator/errors';
import { activityRoutes } from './activity-routes';
import { keyRoutes } from './keys-routes';
import { branchPath, homePage, messagePage, showControls } from './layout';
import { checkId, checkPath, Refusal } from './refusals';
import { allowedHosts, localPath, Sessions, type ConsoleEnv } from './session';
import { usageRoutes } from './usage-routes';
import { LOCAL_CONSOLE_PORT } from '../local-defaults';
import { PROJECT_ROOT } from '../project-paths';

type Env = Record<string, string | undefined>;

export interface ConsoleOptions {
  /** @default 3001 */
  port?: number;
  /** @default '127.0.0.1' */
  host?: string;
  /** The operator context to use (the caller closes it); otherwise one from `env`. */
  ctx?: OperatorContext;
  /** @default process.env */
  env?: Env;
  /** Branches to offer on the home page (e.g. the seeded ones). @default [] */
  branches?: string[];
  /** For tests: a fixed launch token. @default a random one */
  token?: string;
  /** How long a session lasts after its last request. @default 12 hours */
  sessionTtlMs?: number;
  /** For tests: the clock sessions expire by. @default Date.now */
  now?: () => number;
  /** Where to report failures (never a key value or request body). @default stderr */
  log?: (line: string) => void;
}

/** The folder of an installed package's main entry (chart.js exports no package.json). */
const packageDir = (pkg: string, entry = ''): string =>
  dirname(createRequire(import.meta.filename).resolve(`${pkg}${entry}`));

// From the root, not from this file: the CLI runs a build of it in dist/ (scripts/build.mjs).
const OWN_ASSETS = join(PROJECT_ROOT, 'lib', 'console', 'assets');

/** The files under /assets/, from installed packages and this checkout: no CDN, no build step. */
const ASSETS = {
  'pico.classless.min.css': join(packageDir('@picocss/pico', '/package.json'), 'css'),
  'chart.umd.min.js': packageDir('chart.js'),
  'console.js': OWN_ASSETS,
  'console.css': OWN_ASSETS,
};

/** The home page, and the field that opens a branch by id. */
const homeRoutes = new Hono<ConsoleEnv>()
  .get('/', async (c) => c.html(homePage(await namedBranches(c.var))))
  .get('/branches', async (c) => {
    const branch = c.req.query('branch')?.trim();
    if (!branch) return c.html(homePage(await namedBranches(c.var), 'Enter a branch id.'), 400);
    return c.redirect(branchPath(checkId(branch, 'branch id'), 'keys'), 303);
  });

/** The branches offered on the home page, each with its name (a branch not found is listed by id). */
const namedBranches = ({ ctx, branches }: ConsoleEnv['Variables']) =>
  Promise.all(branches.map(async (id) => ({ id, name: (await ctx.branchData.getBranch(id))?.name })));

/** Every page of the console. */
const ROUTES = [homeRoutes, keyRoutes, usageRoutes, activityRoutes];

/** Each operator error code's page (lib/operator/errors.ts): mapped by code, never by message text. */
const OPERATOR_ERROR_PAGES: Record<OperatorErrorCode, [status: ContentfulStatusCode, title: string]> = {
  invalid_input: [400, 'Bad request'],
  unknown_branch: [404, 'Not found'],
  unknown_key: [404, 'Not found'],
  key_not_changeable: [409, 'Nothing to do'],
  conflict: [409, 'Changed meanwhile'],
};

/** The page for a failure: a refusal or bad input is a 4xx, never a stack trace. */
const failurePage = (error: unknown): [ContentfulStatusCode, title: string, message: string] | undefined => {
  if (error instanceof Refusal) return [error.status, error.title, error.message];
  // hono/csrf refuses with a bare 403.
  if (error instanceof HTTPException && error.status === 403)
    return [403, 'Refused', 'This form was not sent from the console itself.'];
  if (error instanceof InvalidUsagePositionError)
    return [400, 'Bad request', 'That page of the log does not exist: start from the newest.'];
  if (error instanceof OperatorError) return [...OPERATOR_ERROR_PAGES[error.code], error.message];
  if (error instanceof DataStoreUnavailableError) {
    // What DynamoDB answered, when it did: the embedded one says why it can't serve (a full disk).
    const answer = error.cause as { message?: string; $metadata?: { httpStatusCode?: number } } | undefined;
    const said = answer?.$metadata?.httpStatusCode ? `DynamoDB answered: ${answer.message?.slice(0, 500)}` : '';
    return [503, 'Unavailable', said || 'DynamoDB is not reachable; try again shortly.'];
  }
  return undefined;
};

/** What the app answers with, known once the server listens (the port may be 0). */
type ConsoleSetup = Pick<ConsoleEnv['Variables'], 'ctx' | 'sessions' | 'branches'> & {
  hosts: Set<string>;
  log: (line: string) => void;
};

const MISDIRECTED = 'Misdirected request: this console answers only on its own address.\n';

/** Headers on every response (docs/console.md "Security"): hono/secure-headers' own, with this policy. */
const SECURE_HEADERS = secureHeaders({
  contentSecurityPolicy: {
    defaultSrc: ["'self'"],
    // Pico's icons (checkbox ticks, select arrows) are data: SVGs in its stylesheet.
    imgSrc: ["'self'", 'data:'],
    baseUri: ["'none'"],
    formAction: ["'self'"],
    objectSrc: ["'none'"],
    frameAncestors: ["'none'"],
  },
  xFrameOptions: 'DENY',
  // Plain http on this machine, where a browser ignores it.
  strictTransportSecurity: false,
});

/** Pages are never cached; assets change only with an install or an edit. */
const caching: MiddlewareHandler = async (c, next) => {
  await next();
  const asset = c.res.ok && c.req.path.startsWith('/assets/');
  c.res.headers.set('Cache-Control', asset ? 'private, max-age=3600' : 'no-store');
};

const MAX_FORM_BYTES = 16 * 1024;

const formLimit = bodyLimit({
  maxSize: MAX_FORM_BYTES,
  onError: () => {
    throw new Refusal(413, 'Form too large', 'The form is larger than the console accepts.');
  },
});

/** A POST's form, once it carries the session's CSRF token (after hono/csrf's check of Origin or Sec-Fetch-Site). */
const formWithToken: MiddlewareHandler<ConsoleEnv> = async (c, next) => {
  const type = c.req.header('content-type')?.split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') {
    throw new Refusal(415, 'Unsupported form', 'Forms are sent as application/x-www-form-urlencoded.');
  }
  const form = new URLSearchParams(await c.req.text());
  if (!(await timingSafeEqual(form.get('_csrf') ?? '', c.var.session.csrf))) {
    throw new Refusal(403, 'Refused', 'The form is missing its security token: reload the page and try again.');
  }
  c.set('form', form);
  await next();
};

const consoleApp = ({ ctx, sessions, branches, hosts, log }: ConsoleSetup): Hono<ConsoleEnv> => {
  // A trailing slash finds the same page.
  const app = new Hono<ConsoleEnv>({ strict: false });
  app.use(SECURE_HEADERS, caching, async (c, next) => {
    // DNS rebinding: a page on another name that resolves here is still not this console.
    if (!hosts.has((c.req.header('host') ?? '').toLowerCase())) return c.text(MISDIRECTED, 421);
    c.set('ctx', ctx);
    c.set('sessions', sessions);
    c.set('branches', branches);
    await next();
  });
  for (const [file, folder] of Object.entries(ASSETS))
    app.get(`/assets/${file}`, serveStatic({ path: join(folder, file) }));
  // The launch link: once, for a new session; a browser that has one already just goes on.
  app.use(async (c, next) => {
    const given = c.req.query('token');
    if (given === undefined || c.req.method !== 'GET') return next();
    const url = new URL(c.req.url);
    url.searchParams.delete('token');
    if (!sessions.fromCookies(c.req.header('cookie'))) {
      const session = await sessions.launch(given);
      if (!session) {
        throw new Refusal(
          403,
          'This link does not open the console',
          'A launch link works once, and this one is wrong or already used. Press Enter in the terminal running the console for a new link.',
        );
      }
      setCookie(c, sessions.cookieName, session.id, { path: '/', httpOnly: true, sameSite: 'Strict' });
    }
    return c.redirect(localPath(`${url.pathname}${url.search}`), 303);
  });
  app.use(async (c, next) => {
    const session = sessions.fromCookies(c.req.header('cookie'));
    if (!session) {
      throw new Refusal(
        401,
        'Open the console from its link',
        'Open the link the console printed when it started (it ends in ?token=…); a session ends 12 hours after its last page.',
      );
    }
    c.set('session', session);
    checkPath(c.req.url);
    await next();
  });
  app.post('*', csrf(), formLimit, formWithToken);
  for (const routes of ROUTES) app.route('/', routes);
  // A known path with another method.
  for (const path of new Set(ROUTES.flatMap((routes) => routes.routes.map((route) => route.path)))) {
    app.all(path, () => {
      throw new Refusal(405, 'Method not allowed', 'This page does not take that method.');
    });
  }
  app.notFound((c) => c.html(messagePage('Not found', 'No such page.'), 404));
  app.onError((error, c) => {
    const failure = failurePage(error);
    if (failure) return c.html(messagePage(failure[1], failure[2]), failure[0]);
    const detail = error instanceof DataStoreError ? ` (${error.message})` : '';
    const path = new URL(c.req.url).pathname;
    log(`console: ${c.req.method} ${showControls(path)} failed: ${error.name}${showControls(detail)}`);
    return c.html(messagePage('Something went wrong', 'The console could not complete this request.'), 500);
  });
  return app;
};

/**
 * Serves the console: `url` is the link to open (its launch token works once), `newLink()` a new
 * one for the terminal that started it (the old one, used or not, opens nothing).
 */
export const startConsole = async (options: ConsoleOptions = {}) => {
  const host = options.host ?? '127.0.0.1';
  const ownsContext = options.ctx === undefined;
  const ctx = options.ctx ?? createOperatorContext(options.env ?? process.env);
  const server = createServer().listen(options.port ?? LOCAL_CONSOLE_PORT, host);
  await once(server, 'listening').catch((error: unknown) => {
    if (ownsContext) ctx.close();
    throw error;
  });
  const port = (server.address() as AddressInfo).port;
  const sessions = new Sessions(port, options.token, options.sessionTtlMs, options.now);
  const app = consoleApp({
    ctx,
    sessions,
    branches: options.branches ?? [],
    hosts: allowedHosts(host, port),
    log: options.log ?? ((line: string) => process.stderr.write(`${line}\n`)),
  });
  // Its own Request and Response, not the process's globals: the local API runs in this process too.
  // A request without Host gets a URL on `hostname`, and then the Host check's 421.
  server.on('request', getRequestListener(app.fetch, { hostname: 'localhost', overrideGlobalObjects: false }));
  const displayHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  const origin = `http://${displayHost}:${port}`;
  const link = () => `${origin}/?token=${sessions.token}`;
  return {
    url: link(),
    newLink: () => {
      sessions.renewToken();
      return link();
    },
    /** e.g. `http://127.0.0.1:3001`. */
    origin,
    token: sessions.token,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      if (ownsContext) ctx.close();
    },
  };
};

export type SettingsConsole = Awaited<ReturnType<typeof startConsole>>;
