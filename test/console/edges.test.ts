/**
 * Where Hono's defaults differ from what the console promises (docs/console.md "Security"), the
 * console keeps its promise: the headers it states, a POST from a page that says nothing of its
 * origin refused, a form's size bounded, a request without a usable Host never served, assets
 * from installed packages, and a CSV export whose read fails part way cut short.
 */
import { createOperatorContext } from '../../lib/operator/context';
import { startConsole } from '../../lib/console/server';
import { listKeys } from '../../lib/operator/keys';
import type { UsageRecord } from '../../shared/domain/usage-record';
import { connect } from 'node:net';
import { openSession, rawRequest, sessionCookie, useEnvironment } from './support';

const setup = useEnvironment();
const FORM_TYPE = 'application/x-www-form-urlencoded';

/** The raw response head to exactly these bytes, as no HTTP client would send them. */
const rawHead = (origin: string, text: string) =>
  new Promise<string>((resolve, reject) => {
    const socket = connect(Number(new URL(origin).port), '127.0.0.1');
    let received = '';
    socket.on('data', (chunk) => (received += String(chunk)));
    socket.on('end', () => resolve(received.split('\r\n\r\n')[0]!));
    socket.on('error', reject);
    socket.end(text);
  });

it('sends the headers the console states, not only secure-headers defaults', async () => {
  const { headers } = await rawRequest(setup.env.console.origin, '/');
  expect(headers).toMatchObject({
    'x-frame-options': 'DENY',
    'referrer-policy': 'no-referrer',
    'cross-origin-opener-policy': 'same-origin',
    'cross-origin-resource-policy': 'same-origin',
    'content-security-policy':
      "default-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; object-src 'none'; frame-ancestors 'none'",
  });
});

it('serves its assets from the installed packages, cached briefly, and only those', async () => {
  const { origin } = setup.env.console;
  const chart = await rawRequest(origin, '/assets/chart.umd.min.js');
  expect([chart.status, chart.headers['content-type'], chart.headers['cache-control']]).toEqual([
    200,
    'text/javascript; charset=utf-8',
    'private, max-age=3600',
  ]);
  expect(chart.body).toContain('Chart.js v4.6.1');
  const pico = await rawRequest(origin, '/assets/pico.classless.min.css');
  expect(pico.body).toContain('Pico CSS');
  for (const path of ['/assets/../package.json', '/assets/%2e%2e/package.json', '/assets/other.js']) {
    const response = await rawRequest(origin, path);
    expect(response.status).toBe(401); // no session: nothing else is served without one
    expect(response.headers['cache-control']).toBe('no-store');
  }
});

describe('a POST', () => {
  const post = async (headers: Record<string, string>, body: string) => {
    const { cookie } = await openSession(setup.env.console, setup.env.stack.demoBranchId);
    return rawRequest(setup.env.console.origin, `/branches/${setup.env.stack.demoBranchId}/keys`, {
      method: 'POST',
      headers: { cookie, ...headers },
      body,
    });
  };
  const createForm = async (name: string) => {
    const { csrf, form } = await openSession(setup.env.console, setup.env.stack.demoBranchId);
    return new URLSearchParams({ _csrf: csrf, _form: form, name, scopes: 'read' }).toString();
  };
  const keyNamed = async (name: string) =>
    (await listKeys(setup.ctx, setup.env.stack.demoBranchId)).some((key) => key.name === name);

  it('is refused when the browser says neither its Origin nor Sec-Fetch-Site, even with the CSRF token', async () => {
    const refused = await post({ 'content-type': FORM_TYPE }, await createForm('no origin'));
    expect(refused.status).toBe(403);
    expect(refused.body).toContain('This form was not sent from the console itself.');
    expect(await keyNamed('no origin')).toBe(false);
    // Chromium's own forms under Referrer-Policy: no-referrer: Origin null, Sec-Fetch-Site same-origin.
    const sent = await post(
      { 'content-type': FORM_TYPE, origin: 'null', 'sec-fetch-site': 'same-origin' },
      await createForm('from the page'),
    );
    expect(sent.status).toBe(200);
    expect(await keyNamed('from the page')).toBe(true);
  });

  it('of more than 16 KiB is a 413 page, with or without a Content-Length, and changes nothing', async () => {
    const origin = setup.env.console.origin;
    const big = `${await createForm('too big')}&pad=${'x'.repeat(16 * 1024)}`;
    const withLength = await post({ 'content-type': FORM_TYPE, origin }, big);
    expect([withLength.status, withLength.body]).toEqual([413, expect.stringContaining('<h1>Form too large</h1>')]);
    const chunked = await post({ 'content-type': FORM_TYPE, origin, 'transfer-encoding': 'chunked' }, big);
    expect(chunked.status).toBe(413);
    expect(await keyNamed('too big')).toBe(false);
  });

  it('of another content type is a 415 page', async () => {
    const origin = setup.env.console.origin;
    const json = await post({ 'content-type': 'application/json', origin }, '{"name":"json"}');
    expect(json.status).toBe(415);
    expect(json.body).toContain('application/x-www-form-urlencoded');
  });
});

it('refuses a request without Host with 421, and one no URL can hold with 400, never serving it', async () => {
  const origin = setup.env.console.origin;
  const cookie = await sessionCookie(setup.env.console);
  const path = `/branches/${setup.env.stack.demoBranchId}/keys`;
  expect(await rawHead(origin, `GET ${path} HTTP/1.0\r\nCookie: ${cookie}\r\n\r\n`)).toMatch(/^HTTP\/1\.1 421 /);
  const host = new URL(origin).host;
  for (const request of [
    `GET ${path} HTTP/1.1\r\nHost: a b\r\nCookie: ${cookie}\r\nConnection: close\r\n\r\n`,
    `GET /\\evil.example/?token=x HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
  ]) {
    const head = await rawHead(origin, request);
    expect(head).toMatch(/^HTTP\/1\.1 400 /);
    expect(head).not.toMatch(/set-cookie|location/i);
  }
});

it('cuts the CSV download short when a read fails after its first page, and prints nothing', async () => {
  const branchId = 'br_second';
  const { record } = await setup.ctx.keys.create({ branchId, scopes: ['read'], name: 'csv fault' });
  const at = Date.now() - 60_000;
  const records: UsageRecord[] = Array.from({ length: 1_100 }, (_, i) => ({
    key_id: record.key_id,
    branch_id: branchId,
    method: 'GET',
    path: '/api/v1/branch',
    route: 'GET /v1/branch',
    status: 200,
    response_time_ms: 5,
    timestamp: new Date(at - i * 1_000).toISOString(),
    request_id: `req-csv-${i}`,
  }));
  await setup.ctx.usage.putBatch(records, 1);
  // A stub to inject the fault: the export reads 1,000 records a Query, and the second Query fails.
  const ctx = createOperatorContext(process.env);
  const query = ctx.usage.query.bind(ctx.usage);
  let queries = 0;
  ctx.usage.query = (...args) => (++queries === 2 ? Promise.reject(new Error('injected')) : query(...args));
  const printed = jest.spyOn(console, 'error').mockImplementation(() => undefined);
  const settings = await startConsole({ port: 0, ctx, log: () => undefined });
  try {
    const cookie = await sessionCookie(settings);
    const path = `/branches/${branchId}/usage.csv?key=${record.key_id}`;
    // Cut, not ended: no client takes what it got for the whole file.
    const download = fetch(`${settings.origin}${path}`, { headers: { cookie } }).then((response) => response.text());
    await expect(download).rejects.toThrow();
    expect(queries).toBe(2);
    expect(printed).not.toHaveBeenCalled();
  } finally {
    printed.mockRestore();
    await settings.close();
    ctx.close();
  }
});
