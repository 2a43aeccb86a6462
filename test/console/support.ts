/**
 * Shared by the console tests: a Chromium to drive (Debian's, through playwright-core), the
 * local environment (embedded DynamoDB tables of this test file, demo data, the gateway) and a
 * settings console over it, and raw HTTP for the checks a browser would never let a test make.
 */
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { CHROMIUM_PATH } from '../../scripts/chromium';
import { startConsole, type SettingsConsole } from '../../lib/console/server';
import { createOperatorContext, type OperatorContext } from '../../lib/operator/context';
import { startLocalEnvironment, type LocalEnvironment } from '../../lib/local/environment';

type Suite = (name: string, fn: () => void) => void;
/**
 * `describe` when a Chromium is found; otherwise one test that says plainly the browser tests
 * did not run (`.ci/run` installs Chromium, so CI always runs them).
 */
export const describeIfChromium: Suite = CHROMIUM_PATH
  ? describe
  : (name) =>
      test(`${name} (no Chromium at /usr/bin/chromium or CHROMIUM_PATH: not run)`, () => {
        console.warn(
          `Browser tests "${name}" did not run: no Chromium found. Install it with "apt-get install -y chromium" or set CHROMIUM_PATH.`,
        );
      });

export interface Environment {
  stack: LocalEnvironment;
  console: SettingsConsole;
  /** What the console logged. */
  logged: string[];
  close(): Promise<void>;
}

/** For a test file: the environment (started before its tests, closed after) and an operator context. */
export const useEnvironment = (): { env: Environment; ctx: OperatorContext } => {
  const handle = { ctx: createOperatorContext(process.env) } as { env: Environment; ctx: OperatorContext };
  beforeAll(async () => {
    handle.env = await startEnvironment();
  });
  afterAll(async () => {
    await handle.env?.close();
    handle.ctx.close();
  });
  return handle;
};

/** The local environment on this test file's tables, and a console over it. */
export const startEnvironment = async (): Promise<Environment> => {
  const stack = await startLocalEnvironment({ port: 0, dynamoPort: 0, dynamoEndpoint: process.env.DYNAMODB_ENDPOINT! });
  const logged: string[] = [];
  const settings = await startConsole({ port: 0, branches: [stack.demoBranchId], log: (line) => logged.push(line) });
  return {
    stack,
    console: settings,
    logged,
    close: async () => {
      await settings.close();
      await stack.close();
    },
  };
};

export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** One HTTP request with exactly these headers (Host included), as an attacker could send it. */
export const rawRequest = (
  origin: string,
  path: string,
  { method = 'GET', headers = {}, body }: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<RawResponse> =>
  new Promise((resolve, reject) => {
    const request = httpRequest(`${origin}${path}`, { method, headers }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: text }));
    });
    request.on('error', reject);
    request.end(body);
  });

/** The launch token works once: the session cookie each console's first launch got. */
const cookies = new WeakMap<SettingsConsole, string>();

/** The console's session cookie (launching it the first time), as the browser that opened the link holds it. */
export const sessionCookie = async (settings: SettingsConsole): Promise<string> => {
  const known = cookies.get(settings);
  if (known) return known;
  const launch = await rawRequest(settings.origin, `/?token=${settings.token}`);
  const cookie = String(launch.headers['set-cookie']?.[0]).split(';')[0]!;
  cookies.set(settings, cookie);
  return cookie;
};

/** A session cookie and the CSRF token and a one-use form id of a fresh keys page, the way a browser gets them. */
export const openSession = async (settings: SettingsConsole, branchId: string) => {
  const cookie = await sessionCookie(settings);
  const page = await rawRequest(settings.origin, `/branches/${branchId}/keys`, { headers: { cookie } });
  const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)![1]!;
  const form = /name="_form" value="([^"]+)"/.exec(page.body)![1]!;
  return { cookie, csrf, form, page };
};

/** Posts a form the way the console's pages do (session, CSRF token, same origin). */
export const postForm = async (
  settings: SettingsConsole,
  branchId: string,
  path: string,
  fields: [string, string][],
): Promise<RawResponse> => {
  const { cookie, csrf, form } = await openSession(settings, branchId);
  return rawRequest(settings.origin, path, {
    method: 'POST',
    headers: { cookie, origin: settings.origin, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams([['_csrf', csrf], ['_form', form], ...fields]).toString(),
  });
};
