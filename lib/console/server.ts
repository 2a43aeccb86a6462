/**
 * The settings console: the branch's "API keys", "API usage" and "Activity" pages over the
 * operator library, on a local HTTP server (docs/console.md). `startConsole` serves it and
 * returns the URL to open, with its launch token.
 *
 * A request passes the checks every request gets (Host, assets, launch token, session; for a
 * POST, same origin and CSRF token), then the route table (ROUTES) answers it.
 */
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { DataStoreError, DataStoreUnavailableError } from '../../shared/data/data-store-errors';
import { InvalidUsagePositionError } from '../../shared/data/repositories/usage';
import { createOperatorContext, type OperatorContext } from '../operator/context';
import { OperatorError, type OperatorErrorCode } from '../operator/errors';
import { showControls } from './html';
import { checkId, matchPath, notFound, pathSegments, readForm, Refusal, send, type Reply } from './http';
import { ACTIVITY_ROUTES } from './activity-routes';
import { KEY_ACTION_ROUTES } from './key-action-routes';
import { KEY_ROUTES } from './keys-routes';
import { branchPath, homePage, messagePage } from './layout';
import { page, redirect, type ConsoleRoute, type RouteRequest } from './routes';
import {
  allowedHosts,
  DEFAULT_SESSION_TTL_MS,
  isSameOrigin,
  LaunchToken,
  localPath,
  randomToken,
  sameSecret,
  Sessions,
  type Session,
} from './security';
import { USAGE_ROUTES } from './usage-routes';
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

export interface SettingsConsole {
  /** The URL to open: it carries the launch token, which works once. */
  url: string;
  /** A new launch link (the old one, used or not, opens nothing): for the terminal that started it. */
  newLink(): string;
  /** The console's origin, e.g. `http://127.0.0.1:3001`. */
  origin: string;
  token: string;
  close(): Promise<void>;
}

/** A file of an installed package, found from the package's main entry (chart.js exports no package.json). */
const packageFile = (pkg: string, entry: string, file: string): Buffer =>
  readFileSync(join(dirname(createRequire(import.meta.filename).resolve(`${pkg}${entry}`)), file));

// From the root, not from this file: the CLI runs a build of it in dist/ (scripts/build.mjs).
const ownFile = (file: string): Buffer => readFileSync(join(PROJECT_ROOT, 'lib', 'console', 'assets', file));
const JS = 'text/javascript; charset=utf-8';
const CSS = 'text/css; charset=utf-8';

const loadAssets = (): Record<string, { body: Buffer; type: string }> => ({
  '/assets/pico.classless.min.css': {
    body: packageFile('@picocss/pico', '/package.json', 'css/pico.classless.min.css'),
    type: CSS,
  },
  '/assets/chart.umd.min.js': { body: packageFile('chart.js', '', 'chart.umd.min.js'), type: JS },
  '/assets/console.js': { body: ownFile('console.js'), type: JS },
  '/assets/console.css': { body: ownFile('console.css'), type: CSS },
});

/** The branches offered on the home page, each with its name (a branch not found is listed by id). */
const namedBranches = (r: RouteRequest) =>
  Promise.all(r.branches.map(async (id) => ({ id, name: (await r.ctx.branchData.getBranch(id))?.name })));

const HOME_ROUTES: ConsoleRoute[] = [
  { method: 'GET', path: '/', handle: async (r) => page(homePage(await namedBranches(r))) },
  {
    method: 'GET',
    path: '/branches',
    handle: async (r) => {
      const branch = r.query.get('branch')?.trim();
      if (!branch) return page(homePage(await namedBranches(r), 'Enter a branch id.'), 400);
      return redirect(branchPath(checkId(branch, 'branch id'), 'keys'));
    },
  },
];

/** Every page of the console, matched in order. */
export const ROUTES: readonly ConsoleRoute[] = [
  ...HOME_ROUTES,
  ...KEY_ACTION_ROUTES,
  ...KEY_ROUTES,
  ...USAGE_ROUTES,
  ...ACTIVITY_ROUTES,
];

/** The route for this method and path, with its checked parameters; a known path with another method is a 405. */
const route = (method: string, segments: string[]): { route: ConsoleRoute; params: Record<string, string> } => {
  let pathMatched = false;
  for (const candidate of ROUTES) {
    const params = matchPath(candidate.path, segments);
    if (!params) continue;
    pathMatched = true;
    if (candidate.method === method || (method === 'HEAD' && candidate.method === 'GET')) {
      for (const [name, value] of Object.entries(params))
        checkId(value, name === 'branch' ? 'branch id' : `${name} id`);
      return { route: candidate, params };
    }
  }
  if (pathMatched) throw new Refusal(405, 'Method not allowed', 'This page does not take that method.');
  throw notFound();
};

/** Each operator error code's page (lib/operator/errors.ts): mapped by code, never by message text. */
const OPERATOR_ERROR_PAGES: Record<OperatorErrorCode, [status: number, title: string]> = {
  invalid_input: [400, 'Bad request'],
  unknown_branch: [404, 'Not found'],
  unknown_key: [404, 'Not found'],
  key_not_changeable: [409, 'Nothing to do'],
  conflict: [409, 'Changed meanwhile'],
};

/** The page for a failure: a refusal or bad input is a 4xx, never a stack trace. */
const failurePage = (error: unknown): Reply | undefined => {
  if (error instanceof Refusal) return page(messagePage(error.title, error.message), error.status);
  if (error instanceof InvalidUsagePositionError) {
    return page(messagePage('Bad request', 'That page of the log does not exist: start from the newest.'), 400);
  }
  if (error instanceof OperatorError) {
    const [status, title] = OPERATOR_ERROR_PAGES[error.code];
    return page(messagePage(title, error.message), status);
  }
  if (error instanceof DataStoreUnavailableError) {
    return page(messagePage('Unavailable', 'DynamoDB is not reachable; try again shortly.'), 503);
  }
  return undefined;
};

/** What every request is checked against: set once the server listens (the port may be 0). */
interface ConsoleState {
  ctx: OperatorContext;
  launchToken: LaunchToken;
  assets: ReturnType<typeof loadAssets>;
  branches: readonly string[];
  origin: string;
  hosts: Set<string>;
  sessions: Sessions;
}

/** The launch link: once, for a new session; a browser that has one already just goes on. */
const launch = (state: ConsoleState, request: IncomingMessage, response: ServerResponse, url: URL): void => {
  const given = url.searchParams.get('token') ?? '';
  url.searchParams.delete('token');
  const target = localPath(`${url.pathname}${url.search}`);
  if (state.sessions.fromRequest(request)) return send(response, 303, '', { Location: target });
  if (!state.launchToken.redeem(given)) {
    throw new Refusal(
      403,
      'This link does not open the console',
      'A launch link works once, and this one is wrong or already used. Press Enter in the terminal running the console for a new link.',
    );
  }
  const session = state.sessions.create();
  send(response, 303, '', { Location: target, 'Set-Cookie': state.sessions.cookie(session) });
};

/** A POST's body, once it is shown to come from the console's own page with the session's CSRF token. */
const checkedForm = async (request: IncomingMessage, session: Session): Promise<URLSearchParams> => {
  if (!isSameOrigin(request)) throw new Refusal(403, 'Refused', 'This form was not sent from the console itself.');
  const form = await readForm(request);
  if (!sameSecret(form.get('_csrf') ?? undefined, session.csrf)) {
    throw new Refusal(403, 'Refused', 'The form is missing its security token: reload the page and try again.');
  }
  return form;
};

/** Host, assets, launch link, session; for a POST same origin and CSRF token; then the route table. */
const handle = async (state: ConsoleState, request: IncomingMessage, response: ServerResponse): Promise<void> => {
  // DNS rebinding: a page on another name that resolves here is still not this console.
  if (!state.hosts.has((request.headers.host ?? '').toLowerCase())) {
    return send(response, 421, 'Misdirected request: this console answers only on its own address.\n', {
      'Content-Type': 'text/plain; charset=utf-8',
    });
  }
  const url = new URL(request.url ?? '/', state.origin);
  const method = request.method ?? 'GET';
  const asset = state.assets[url.pathname];
  if (asset && (method === 'GET' || method === 'HEAD')) {
    // Files of installed packages and of this checkout: they change only with an install or an edit.
    return send(response, 200, asset.body, { 'Content-Type': asset.type, 'Cache-Control': 'private, max-age=3600' });
  }
  if (url.searchParams.has('token') && method === 'GET') return launch(state, request, response, url);
  const session = state.sessions.fromRequest(request);
  if (!session) {
    throw new Refusal(
      401,
      'Open the console from its link',
      'Open the link the console printed when it started (it ends in ?token=…); a session ends 12 hours after its last page.',
    );
  }
  const { route: matched, params } = route(method, pathSegments(url.pathname));
  const form = method === 'POST' ? await checkedForm(request, session) : new URLSearchParams();
  const { ctx, sessions, branches } = state;
  const reply = await matched.handle({
    ctx,
    session,
    sessions,
    params,
    query: url.searchParams,
    form,
    response,
    branches,
  });
  if (reply) send(response, reply.status, reply.body, reply.headers);
};

/** The answer to a request that failed: its 4xx page, or a logged 500 that says nothing of the cause. */
const fail = (log: (line: string) => void, request: IncomingMessage, response: ServerResponse, error: unknown) => {
  if (response.headersSent) return void response.destroy();
  const failure = failurePage(error);
  if (failure) return send(response, failure.status, failure.body);
  const name = error instanceof Error ? error.name : 'Error';
  const detail = error instanceof DataStoreError ? ` (${error.message})` : '';
  const path = new URL(request.url ?? '/', 'http://x').pathname;
  log(`console: ${request.method} ${showControls(path)} failed: ${name}${showControls(detail)}`);
  send(response, 500, messagePage('Something went wrong', 'The console could not complete this request.'));
};

export const startConsole = async (options: ConsoleOptions = {}): Promise<SettingsConsole> => {
  const host = options.host ?? '127.0.0.1';
  const ownsContext = options.ctx === undefined;
  const ctx = options.ctx ?? createOperatorContext(options.env ?? process.env);
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const state: ConsoleState = {
    ctx,
    launchToken: new LaunchToken(options.token ?? randomToken()),
    assets: loadAssets(),
    branches: options.branches ?? [],
    origin: '',
    hosts: new Set(),
    sessions: new Sessions(0),
  };
  const server = createServer((request, response) => {
    handle(state, request, response).catch((error: unknown) => fail(log, request, response, error));
  });
  server.listen(options.port ?? LOCAL_CONSOLE_PORT, host);
  try {
    await once(server, 'listening');
  } catch (error) {
    if (ownsContext) ctx.close();
    throw error;
  }
  const port = (server.address() as AddressInfo).port;
  const displayHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  state.origin = `http://${displayHost}:${port}`;
  state.hosts = allowedHosts(host, port);
  state.sessions = new Sessions(port, options.sessionTtlMs ?? DEFAULT_SESSION_TTL_MS, options.now);
  const link = () => `${state.origin}/?token=${state.launchToken.value}`;
  return {
    url: link(),
    newLink: () => {
      state.launchToken.renew();
      return link();
    },
    origin: state.origin,
    token: state.launchToken.value,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      if (ownsContext) ctx.close();
    },
  };
};
