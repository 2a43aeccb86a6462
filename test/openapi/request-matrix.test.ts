/**
 * The contract to the byte (docs/decisions.md "HTTP contract", "Errors"): a matrix of requests,
 * sent as raw HTTP through the local gateway, each answered as docs/openapi.json implies. The
 * expected status comes from the document, not from this file: openapi-backend's request validator
 * judges each query against the published parameter schemas (invalid → 400 `invalid_request`,
 * valid → 200; a parameter the operation does not list is ignored, as the document says), a path or method no operation has is the documented 404 or 405, and headers over
 * the documented bound are a 431. Every answer is then checked against the document's responses,
 * and a live key's headers are checked: present on what an operation answers, absent (as the
 * document says) on what is answered before the key is read. All differences are listed at once.
 */
import { startGateway, type Gateway } from '../../lib/local/gateway';
import { MAX_REQUEST_HEADER_BYTES } from '../../shared/api/http/request-limits';
import { committedContract, contractViolations } from '../support/contract';
import { createKey, createTables, seedBranches } from '../support/harness';

interface Row {
  method: string;
  /** Path within the stage, with the raw query string as sent. */
  target: string;
  /** A token to send instead of the live key. */
  token?: string;
  /**
   * Where the document's prose, not a schema, decides the answer (which ids exist): the operation's
   * description says an id no active provider of the branch has is a 404.
   */
  described?: Expected;
}

interface Expected {
  status: number;
  code?: string;
  /** Whether the answer comes from an operation that read the key (so it carries the key's headers). */
  keyRead: boolean;
}

const KEY_HEADERS = ['ratelimit-policy', 'ratelimit', 'api-key-expires'];

let gateway: Gateway;
let key: string;
let cursor: string;

const send = async ({ method, target, token }: Row) => {
  const response = await fetch(`${gateway.baseUrl}${target}`, {
    method,
    headers: { authorization: `Bearer ${token ?? key}` },
  });
  return { statusCode: response.status, headers: Object.fromEntries(response.headers), body: await response.text() };
};

beforeAll(async () => {
  await createTables();
  await seedBranches();
  // A live key with an expiry and room for the whole matrix in one rate-limit window.
  ({ key } = await createKey({ expiresAt: new Date(Date.now() + 30 * 86_400_000), rateLimit: '1000/s' }));
  gateway = await startGateway({ port: 0 });
  cursor = JSON.parse((await send({ method: 'GET', target: '/v1/members?limit=1' })).body).next_cursor;
});
afterAll(() => gateway.close());

/** What the document implies for a request: decided by the document's validator and its stated bounds. */
const expectedFor = (row: Row): Expected => {
  const { method, target, token } = row;
  const contract = committedContract();
  const [path = '', query = ''] = target.split('?');
  const headerBytes = `Bearer ${token ?? key}`.length;
  if (headerBytes > MAX_REQUEST_HEADER_BYTES) return { status: 431, code: 'headers_too_large', keyRead: false };
  const entry = contract.paths.find((candidate) => candidate.pattern.test(path));
  const operation = entry?.item[method.toLowerCase()];
  if (!entry) return { status: 404, code: 'not_found', keyRead: false };
  if (!operation) return { status: 405, code: 'method_not_allowed', keyRead: false };
  if (token !== undefined) return { status: 401, code: 'invalid_api_key', keyRead: false };
  if (row.described) return row.described;
  const verdict = contract.validator.validateRequest(
    { method, path, query, headers: { authorization: `Bearer ${key}` } },
    operation.operationId,
  );
  // Query parameters an operation does not list are ignored, as the document's description says.
  const errors = (verdict.errors ?? []).filter(
    (error) => !(error.keyword === 'additionalProperties' && error.instancePath === '/query'),
  );
  return errors.length === 0 ? { status: 200, keyRead: true } : { status: 400, code: 'invalid_request', keyRead: true };
};

const LIMITS = [
  ...['1', '5', '50', '99', '100', '101', '0', '-1', '+5', '1e2', '1E2', '010', '05', '%205', '5%20', '5.0', '0x10'],
  ...['abc', '', '%E2%80%8B5', '%D9%A1', '1&limit=2', '100%00'],
];
const ROWS = (): Row[] => [
  ...['/v1/members', '/v1/payment-providers'].flatMap((list) =>
    LIMITS.map((limit) => ({ method: 'GET', target: `${list}?limit=${limit}` })),
  ),
  { method: 'GET', target: '/v1/members?cursor=' },
  { method: 'GET', target: '/v1/members?cursor=&limit=5' },
  { method: 'GET', target: `/v1/members?cursor=${cursor}` },
  { method: 'GET', target: `/v1/members?limit=1e2&cursor=${cursor}` },
  { method: 'GET', target: '/v1/branch' },
  { method: 'GET', target: '/v1/payment-providers/pp_stripe?limit=abc' },
  { method: 'GET', target: '/v1/branch?cursor=' },
  // A 404 of an operation reads the key first: it carries the key's headers like any other answer.
  {
    method: 'GET',
    target: '/v1/payment-providers/pp_nope',
    described: { status: 404, code: 'not_found', keyRead: true },
  },
  {
    method: 'GET',
    target: '/v1/payment-providers/pp_klarna',
    described: { status: 404, code: 'not_found', keyRead: true },
  },
  { method: 'GET', target: '/v1/members?expand=everything&limit=2' },
  { method: 'GET', target: '/v1/members?expand=everything&limit=0' },
  // Answered before the key is read: no rate-limit fields, no Api-Key-Expires.
  { method: 'GET', target: '/v1/nope' },
  { method: 'GET', target: '/v1/branch/' },
  { method: 'POST', target: '/v1/members' },
  { method: 'DELETE', target: '/v1/branch' },
  { method: 'PUT', target: '/v1/payment-providers/pp_stripe' },
  // Over-long bearer tokens: one that fits the header bound, one of 20 KB that does not.
  { method: 'GET', target: '/v1/branch', token: `wsk_${'a'.repeat(9_000)}` },
  { method: 'GET', target: '/v1/branch', token: `wsk_${'a'.repeat(20 * 1024)}` },
  { method: 'GET', target: '/v1/nope', token: `wsk_${'a'.repeat(20 * 1024)}` },
];

/** Every way one answer differs from what the document implies. */
const differences = async (row: Row): Promise<string[]> => {
  const expected = expectedFor(row);
  const response = await send(row);
  const name = `${row.method} ${row.target.length > 60 ? `${row.target.slice(0, 60)}…` : row.target}${
    row.token ? ` (token of ${row.token.length} characters)` : ''
  }`;
  const found: string[] = [];
  let code: string | undefined;
  try {
    code = JSON.parse(response.body).error?.code;
  } catch {
    found.push(`${name}: body is not JSON`);
  }
  if (response.statusCode !== expected.status || code !== expected.code) {
    found.push(
      `${name}: ${response.statusCode} ${code ?? ''}, document implies ${expected.status} ${expected.code ?? ''}`,
    );
  }
  found.push(
    ...contractViolations({ method: row.method, path: row.target, ...response }).map(
      (problem) => `${name}: ${problem}`,
    ),
  );
  const keyHeaders = KEY_HEADERS.filter((header) => response.headers[header] !== undefined);
  if (expected.keyRead && keyHeaders.length !== KEY_HEADERS.length) {
    found.push(`${name}: a live key's headers missing: has ${keyHeaders.join(', ') || 'none'}`);
  }
  return found;
};

it('answers every request of the matrix as docs/openapi.json implies', async () => {
  const rows = ROWS();
  expect(rows.length).toBeGreaterThan(50);
  const found: string[] = [];
  // One at a time: the matrix is about answers, not load.
  for (const row of rows) found.push(...(await differences(row)));
  expect(found).toEqual([]);
});

it("the matrix's expectations come from the document: it implies both answers for limit", () => {
  const statuses = LIMITS.map((limit) => expectedFor({ method: 'GET', target: `/v1/members?limit=${limit}` }).status);
  expect(new Set(statuses)).toEqual(new Set([200, 400]));
  expect(expectedFor({ method: 'GET', target: '/v1/members?limit=1e2' }).status).toBe(400);
  expect(expectedFor({ method: 'GET', target: '/v1/members?limit=100' }).status).toBe(200);
});
