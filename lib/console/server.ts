/**
 * The settings console: the branch's "API keys" and "API usage" pages over the operator library,
 * on a local HTTP server (docs/console.md). `startConsole` serves it and returns the URL to
 * open, with its launch token.
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
import { auditOf, rollKey } from '../operator/lifecycle';
import { createKey, keyStatus, listKeyPage, OperatorError, revokeKey } from '../operator/operations';
import { showControls } from './html';
import {
  branchPath,
  confirmPage,
  graceField,
  homePage,
  KEY_ACTIONS,
  keysPage,
  KEYS_PAGE_SIZE,
  messagePage,
  usagePage,
  type CreateKeyForm,
} from './pages';
import {
  allowedHosts,
  isSameOrigin,
  randomToken,
  sameSecret,
  SECURITY_HEADERS,
  Sessions,
  type Session,
} from './security';
import {
  allUsageRecords,
  CSV_COLUMNS,
  csvRow,
  DEFAULT_PERIOD,
  loadUsageChart,
  loadUsageLog,
  PERIODS,
  type Bucket,
  type Period,
  type UsageFilters,
} from './usage-data';

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
  /** Where to report failures (never a key value or request body). @default stderr */
  log?: (line: string) => void;
}

export interface SettingsConsole {
  /** The URL to open: it carries the launch token. */
  url: string;
  /** The console's origin, e.g. `http://127.0.0.1:3001`. */
  origin: string;
  token: string;
  close(): Promise<void>;
}

const MAX_FORM_BYTES = 16 * 1024;

/** A file of an installed package, found from the package's main entry (chart.js exports no package.json). */
const packageFile = (pkg: string, entry: string, file: string): Buffer =>
  readFileSync(join(dirname(createRequire(import.meta.filename).resolve(`${pkg}${entry}`)), file));

const loadAssets = (): Record<string, { body: Buffer; type: string }> => ({
  '/assets/pico.classless.min.css': {
    body: packageFile('@picocss/pico', '/package.json', 'css/pico.classless.min.css'),
    type: 'text/css; charset=utf-8',
  },
  '/assets/chart.umd.min.js': {
    body: packageFile('chart.js', '', 'chart.umd.min.js'),
    type: 'text/javascript; charset=utf-8',
  },
  '/assets/console.js': {
    body: readFileSync(join(import.meta.dirname, 'assets', 'console.js')),
    type: 'text/javascript; charset=utf-8',
  },
  '/assets/console.css': {
    body: readFileSync(join(import.meta.dirname, 'assets', 'console.css')),
    type: 'text/css; charset=utf-8',
  },
});

/** A response the console refuses with, before any page is rendered. */
class Refusal extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    message: string,
  ) {
    super(message);
  }
}

const send = (
  response: ServerResponse,
  status: number,
  body: string | Buffer,
  headers: Record<string, string> = {},
): void => {
  response.writeHead(status, {
    ...SECURITY_HEADERS,
    'Cache-Control': 'no-store',
    'Content-Type': 'text/html; charset=utf-8',
    ...headers,
  });
  response.end(body);
};

const readForm = async (request: IncomingMessage): Promise<URLSearchParams> => {
  const type = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') {
    throw new Refusal(415, 'Unsupported form', 'Forms are sent as application/x-www-form-urlencoded.');
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_FORM_BYTES) throw new Refusal(413, 'Form too large', 'The form is larger than the console accepts.');
    chunks.push(chunk);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
};

const parsePeriod = (value: string | null): Period =>
  value !== null && Object.hasOwn(PERIODS, value) ? (value as Period) : DEFAULT_PERIOD;

const parseBucket = (value: string | null, period: Period): Bucket =>
  value === 'hour' || value === 'day' ? value : PERIODS[period].bucket;

export const startConsole = async (options: ConsoleOptions = {}): Promise<SettingsConsole> => {
  const host = options.host ?? '127.0.0.1';
  const ownsContext = options.ctx === undefined;
  const ctx = options.ctx ?? createOperatorContext(options.env ?? process.env);
  const token = options.token ?? randomToken();
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const assets = loadAssets();
  const branches = options.branches ?? [];
  // Set once listening (the port may be 0).
  let origin = '';
  let hosts = new Set<string>();
  let sessions = new Sessions(0);

  const keysView = async (
    session: Session,
    branchId: string,
    extra: Partial<Parameters<typeof keysPage>[0]> = {},
    page = 1,
  ) => {
    const { keys, total } = await listKeyPage(ctx, branchId, {
      offset: (page - 1) * KEYS_PAGE_SIZE,
      limit: KEYS_PAGE_SIZE,
    });
    // The audit of this page's active keys (lib/operator/lifecycle.ts), the same as `keys audit`.
    const findings = new Map((await auditOf(ctx, keys, new Date())).map((audit) => [audit.key_id, audit.findings]));
    return keysPage({
      branchId,
      keys: keys.map((key) => ({
        ...key,
        ...(findings.has(key.key_id) ? { findings: findings.get(key.key_id)! } : {}),
      })),
      total,
      page,
      csrf: session.csrf,
      formId: sessions.issueForm(session),
      ...extra,
    });
  };

  const findKey = async (branchId: string, keyId: string) => {
    const record = await ctx.keys.getById(keyId);
    const key =
      record?.branch_id === branchId ? { ...record, status: keyStatus(record), last_used_at: null } : undefined;
    if (!key) throw new Refusal(404, 'Key not found', `Branch ${branchId} has no key ${keyId}.`);
    return key;
  };

  const usageFilters = async (branchId: string, query: URLSearchParams) => {
    const keys = await ctx.keys.listByBranch(branchId);
    const period = parsePeriod(query.get('period'));
    const keyId = query.get('key') || undefined;
    if (keyId !== undefined && !keys.some((k) => k.key_id === keyId)) {
      throw new Refusal(404, 'Key not found', `Branch ${branchId} has no key ${keyId}.`);
    }
    const filters: UsageFilters = {
      branchId,
      period,
      bucket: parseBucket(query.get('bucket'), period),
      now: new Date(),
      ...(keyId ? { keyId } : {}),
    };
    return { keys, filters };
  };

  const handleGet = async (response: ServerResponse, session: Session, segments: string[], query: URLSearchParams) => {
    if (segments.length === 0) return send(response, 200, homePage(branches));
    if (segments.length === 1 && segments[0] === 'branches') {
      const branch = query.get('branch')?.trim();
      if (!branch) return send(response, 400, homePage(branches, 'Enter a branch id.'));
      return send(response, 303, '', { Location: branchPath(branch, 'keys') });
    }
    const [root, branchId, page, keyId, action] = segments;
    if (root !== 'branches' || branchId === undefined) throw new Refusal(404, 'Not found', 'No such page.');
    if (segments.length === 3 && page === 'keys') {
      const revoked = query.get('revoked');
      const page = Number(query.get('page') ?? '1');
      if (!Number.isSafeInteger(page) || page < 1) throw new Refusal(400, 'Bad request', 'No such page of keys.');
      return send(
        response,
        200,
        await keysView(session, branchId, revoked ? { notice: `Key ${revoked} is revoked.` } : {}, page),
      );
    }
    if (segments.length === 5 && page === 'keys' && keyId !== undefined) {
      const keyAction = KEY_ACTIONS.find((a) => a.action === action);
      if (!keyAction) throw new Refusal(404, 'Not found', 'No such page.');
      const key = await findKey(branchId, keyId);
      if (!keyAction.applies(key)) {
        throw new Refusal(
          409,
          'Nothing to do',
          `Key ${keyId} is ${key.status}${key.rolled_to ? ` and rolled to ${key.rolled_to}` : ''}: it cannot be ${keyAction.done}.`,
        );
      }
      return send(
        response,
        200,
        confirmPage({
          branchId,
          key,
          action: keyAction,
          csrf: session.csrf,
          ...(keyAction.action === 'roll'
            ? {
                consequence:
                  'A new key with the same scopes, rate limit, allowed IPs and expiry is created and shown once. ' +
                  'This key keeps working until the grace period ends, then it is refused.',
                formId: sessions.issueForm(session),
                fields: graceField(),
              }
            : { consequence: 'Calls with this key are refused from the next request on. This cannot be undone.' }),
        }),
      );
    }
    if (segments.length === 3 && page === 'usage') {
      const { keys, filters } = await usageFilters(branchId, query);
      const cursor = query.get('cursor') || undefined;
      // The log first: a bad cursor fails before the chart's larger read starts.
      const log = await loadUsageLog(ctx, filters, cursor);
      const chart = await loadUsageChart(ctx, filters);
      return send(
        response,
        200,
        usagePage({
          branchId,
          keys,
          period: filters.period,
          bucket: filters.bucket,
          chart,
          log: log.records,
          ...(filters.keyId ? { keyId: filters.keyId } : {}),
          ...(cursor ? { cursor } : {}),
          ...(log.nextPosition ? { nextCursor: log.nextPosition } : {}),
        }),
      );
    }
    if (segments.length === 3 && page === 'usage.csv') {
      const { filters } = await usageFilters(branchId, query);
      const pages = allUsageRecords(ctx, filters);
      // Read the first page before the headers go out, so a failure is still a proper error page.
      const first = await pages.next();
      response.writeHead(200, {
        ...SECURITY_HEADERS,
        'Cache-Control': 'no-store',
        'Content-Type': 'text/csv; charset=utf-8',
        'Content-Disposition': `attachment; filename="usage-${branchId.replace(/[^\w.-]/g, '_')}-${filters.period}.csv"`,
      });
      response.write(csvRow(CSV_COLUMNS));
      const writeRecords = (records: Parameters<typeof csvRow>[0][]) => response.write(records.map(csvRow).join(''));
      if (!first.done) writeRecords(first.value.map((r) => CSV_COLUMNS.map((c) => r[c])));
      for await (const records of pages) writeRecords(records.map((r) => CSV_COLUMNS.map((c) => r[c])));
      response.end();
      return;
    }
    throw new Refusal(404, 'Not found', 'No such page.');
  };

  const handlePost = async (
    request: IncomingMessage,
    response: ServerResponse,
    session: Session,
    segments: string[],
  ) => {
    if (!isSameOrigin(request)) {
      throw new Refusal(403, 'Refused', 'This form was not sent from the console itself.');
    }
    const form = await readForm(request);
    if (!sameSecret(form.get('_csrf') ?? undefined, session.csrf)) {
      throw new Refusal(403, 'Refused', 'The form is missing its security token: reload the page and try again.');
    }
    const [root, branchId, page, keyId, action] = segments;
    if (root !== 'branches' || branchId === undefined || page !== 'keys') {
      throw new Refusal(404, 'Not found', 'No such page.');
    }
    if (segments.length === 3) {
      const fields: CreateKeyForm = {
        name: form.get('name') ?? '',
        scopes: form.getAll('scopes'),
        expires: form.get('expires') ?? '',
        allowIps: form.get('allow_ips') ?? '',
        rateLimit: form.get('rate_limit') ?? '',
      };
      if (!sessions.consumeForm(session, form.get('_form') ?? undefined)) {
        // A re-sent form (reload, back button): the first send already created the key and
        // showed its value once; creating a second one would be a surprise.
        return send(
          response,
          409,
          await keysView(session, branchId, {
            error: 'This form was already sent, so no new key was created. A key value is shown only once.',
          }),
        );
      }
      try {
        const { key, record } = await createKey(ctx, {
          branchId,
          scopes: fields.scopes!.join(','),
          ...(fields.name?.trim() ? { name: fields.name } : {}),
          ...(fields.expires ? { expires: fields.expires } : {}),
          ...(fields.allowIps?.trim() ? { allowIps: fields.allowIps } : {}),
          ...(fields.rateLimit?.trim() ? { rateLimit: fields.rateLimit.trim() } : {}),
        });
        // 200 with the value in the body, never a redirect: the value must not reach a URL.
        return send(
          response,
          200,
          await keysView(session, branchId, { created: { key, name: record.name, keyId: record.key_id } }),
        );
      } catch (error) {
        if (!(error instanceof OperatorError)) throw error;
        const message = error.message
          .replace('--scopes', 'Scopes')
          .replace('--expires', 'Expires')
          .replace('--allow-ip', 'Allowed IPs')
          .replace('--rate-limit', 'Rate limit');
        return send(response, 400, await keysView(session, branchId, { error: message, form: fields }));
      }
    }
    if (segments.length === 5 && keyId !== undefined && action === 'roll') {
      // A key the branch does not have is a 404, as everywhere else in the console.
      await findKey(branchId, keyId);
      if (!sessions.consumeForm(session, form.get('_form') ?? undefined)) {
        // Re-sent (reload, back button): the first send rolled the key and showed the new value once.
        return send(
          response,
          409,
          await keysView(session, branchId, { error: 'This form was already sent, so the key was not rolled again.' }),
        );
      }
      try {
        const { key, record, previous } = await rollKey(ctx, { branchId, keyId, grace: form.get('grace') ?? '' });
        // 200 with the value in the body, never a redirect: the value must not reach a URL.
        return send(
          response,
          200,
          await keysView(session, branchId, {
            created: {
              key,
              name: record.name,
              keyId: record.key_id,
              note: `Key ${previous.key_id} keeps working until ${previous.expires_at}.`,
            },
          }),
        );
      } catch (error) {
        if (!(error instanceof OperatorError)) throw error;
        return send(response, 409, await keysView(session, branchId, { error: error.message }));
      }
    }
    if (segments.length === 5 && keyId !== undefined && action === 'revoke') {
      await revokeKey(ctx, { branchId, keyId });
      return send(response, 303, '', {
        Location: `${branchPath(branchId, 'keys')}?revoked=${encodeURIComponent(keyId)}`,
      });
    }
    throw new Refusal(404, 'Not found', 'No such page.');
  };

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    // DNS rebinding: a page on another name that resolves here is still not this console.
    const hostHeader = (request.headers.host ?? '').toLowerCase();
    if (!hosts.has(hostHeader)) {
      send(response, 421, 'Misdirected request: this console answers only on its own address.\n', {
        'Content-Type': 'text/plain; charset=utf-8',
      });
      return;
    }
    const url = new URL(request.url ?? '/', origin);
    const method = request.method ?? 'GET';
    const asset = assets[url.pathname];
    if (asset && (method === 'GET' || method === 'HEAD')) {
      // Files of installed packages and of this checkout: they change only with an install or an edit.
      send(response, 200, asset.body, { 'Content-Type': asset.type, 'Cache-Control': 'private, max-age=3600' });
      return;
    }
    const launch = url.searchParams.get('token');
    if (launch !== null && method === 'GET') {
      if (!sameSecret(launch, token)) throw new Refusal(403, 'Refused', 'This link is not valid for this console.');
      const session = sessions.create();
      url.searchParams.delete('token');
      send(response, 303, '', { Location: `${url.pathname}${url.search}`, 'Set-Cookie': sessions.cookie(session) });
      return;
    }
    const session = sessions.fromRequest(request);
    if (!session) {
      throw new Refusal(
        401,
        'Open the console from its link',
        'Open the link the console printed when it started (it ends in ?token=…).',
      );
    }
    let segments: string[];
    try {
      segments = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
    } catch {
      throw new Refusal(400, 'Bad request', 'The address is not valid.');
    }
    if (method === 'GET' || method === 'HEAD') return handleGet(response, session, segments, url.searchParams);
    if (method === 'POST') return handlePost(request, response, session, segments);
    throw new Refusal(405, 'Method not allowed', 'The console only answers GET and POST.');
  };

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (response.headersSent) {
        response.destroy();
        return;
      }
      if (error instanceof Refusal) {
        send(response, error.status, messagePage(error.title, error.message));
      } else if (error instanceof InvalidUsagePositionError) {
        send(response, 400, messagePage('Bad request', 'That page of the log does not exist: start from the newest.'));
      } else if (error instanceof OperatorError) {
        // By code, never by message text (lib/operator/errors.ts).
        const status = error.code === 'unknown_key' || error.code === 'unknown_branch' ? 404 : 400;
        send(response, status, messagePage(status === 404 ? 'Not found' : 'Bad request', error.message));
      } else if (error instanceof DataStoreUnavailableError) {
        send(response, 503, messagePage('Unavailable', 'DynamoDB is not reachable; try again shortly.'));
      } else {
        const name = error instanceof Error ? error.name : 'Error';
        const detail = error instanceof DataStoreError ? ` (${error.message})` : '';
        log(
          `console: ${request.method} ${showControls(new URL(request.url ?? '/', 'http://x').pathname)} failed: ${name}${showControls(detail)}`,
        );
        send(response, 500, messagePage('Something went wrong', 'The console could not complete this request.'));
      }
    });
  });
  server.listen(options.port ?? 3001, host);
  try {
    await once(server, 'listening');
  } catch (error) {
    if (ownsContext) ctx.close();
    throw error;
  }
  const port = (server.address() as AddressInfo).port;
  const displayHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  origin = `http://${displayHost}:${port}`;
  hosts = allowedHosts(host, port);
  sessions = new Sessions(port);
  return {
    url: `${origin}/?token=${token}`,
    origin,
    token,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      if (ownsContext) ctx.close();
    },
  };
};
