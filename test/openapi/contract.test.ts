/**
 * The contract checker (test/support/contract.ts): real responses of every status pass, and a
 * response that departs from docs/openapi.json in shape, status, error code or headers fails.
 */
import { handler as fallback } from '../../functions/fallback';
import { handler as getBranch } from '../../functions/get-branch';
import { handler as getProvider } from '../../functions/get-payment-provider';
import { handler as listMembers } from '../../functions/list-members';
import { handler as listProviders } from '../../functions/list-payment-providers';
import { telemetry } from '../../shared/lambda/observability';
import { createMiddlewareChain } from '../../shared/api/middleware-chain';
import {
  contractViolations,
  createContract,
  expectToMatchContract,
  warmContract,
  type ContractResponse,
} from '../support/contract';
import {
  closedPortEndpoint,
  createKey,
  createTables,
  FAST_FAILURE_ENV,
  invoke,
  loadService,
  seedBranches,
  type InvokeResult,
} from '../support/harness';

let key: string;

beforeAll(async () => {
  await createTables();
  await seedBranches();
  ({ key } = await createKey());
});

type Input = Parameters<typeof invoke>[1];

/** Invokes a handler and returns the response in the checker's terms. */
const call = async (handler: Parameters<typeof invoke>[0], input: Input): Promise<ContractResponse> => {
  const res: InvokeResult = await invoke(handler, input);
  const query = typeof input.query === 'string' ? input.query : new URLSearchParams(input.query as never).toString();
  return {
    method: input.method ?? 'GET',
    path: query ? `${input.path}?${query}` : input.path,
    statusCode: res.statusCode,
    headers: res.headers,
    body: res.body,
  };
};

const withBody = (response: ContractResponse, change: (json: any) => void): ContractResponse => {
  const json = JSON.parse(response.body as string);
  change(json);
  return { ...response, body: JSON.stringify(json) };
};

const withoutHeader = (response: ContractResponse, name: string): ContractResponse => ({
  ...response,
  headers: Object.fromEntries(Object.entries(response.headers ?? {}).filter(([header]) => header !== name)),
});

const provider = (id: string): Input => ({ path: `/v1/payment-providers/${id}`, pathParameters: { id }, key });

describe('real responses match the contract', () => {
  const cases: [string, () => Promise<ContractResponse>, number][] = [
    ['GetBranch 200', () => call(getBranch, { path: '/v1/branch', key }), 200],
    ['ListMembers 200 (first page)', () => call(listMembers, { path: '/v1/members', key, query: { limit: '5' } }), 200],
    ['ListPaymentProviders 200', () => call(listProviders, { path: '/v1/payment-providers', key }), 200],
    ['GetPaymentProvider 200', () => call(getProvider, provider('pp_stripe')), 200],
    ['GetPaymentProvider 404 (inactive)', () => call(getProvider, provider('pp_klarna')), 404],
    ['400 bad limit', () => call(listMembers, { path: '/v1/members', key, query: { limit: '0' } }), 400],
    ['400 bad cursor', () => call(listMembers, { path: '/v1/members', key, query: { cursor: 'x.y' } }), 400],
    ['401 missing key', () => call(getBranch, { path: '/v1/branch' }), 401],
    ['401 invalid key', () => call(getBranch, { path: '/v1/branch', key: 'wsk_nope' }), 401],
    [
      '401 expired key',
      async () => call(getBranch, { path: '/v1/branch', key: (await createKey({ expiresAt: new Date(1000) })).key }),
      401,
    ],
    [
      '403 no read scope',
      async () => call(getBranch, { path: '/v1/branch', key: (await createKey({ scopes: ['write'] })).key }),
      403,
    ],
    ['404 unknown path', () => call(fallback, { path: '/v1/nope' }), 404],
    ['405 known path, other method', () => call(fallback, { path: '/v1/branch', method: 'DELETE' }), 405],
    [
      '500 unexpected error',
      () =>
        call(
          createMiddlewareChain(async () => {
            throw new Error('boom');
          }, telemetry),
          { path: '/v1/branch', key },
        ),
      500,
    ],
  ];

  it.each(cases)('%s', async (_name, run, status) => {
    const response = await run();
    expect(response.statusCode).toBe(status);
    expect(contractViolations(response)).toEqual([]);
  });

  it('503 when the database is unreachable', async () => {
    const service = await loadService({ DYNAMODB_ENDPOINT: await closedPortEndpoint(), ...FAST_FAILURE_ENV });
    const response = await call(service.getBranch, { path: '/v1/branch', key });
    expect(response.statusCode).toBe(503);
    expect(contractViolations(response)).toEqual([]);
  });
});

describe('a response that departs from the document fails', () => {
  let branch: ContractResponse;
  let members: ContractResponse;
  let unauthorized: ContractResponse;
  let notAllowed: ContractResponse;

  beforeAll(async () => {
    branch = await call(getBranch, { path: '/v1/branch', key });
    members = await call(listMembers, { path: '/v1/members', key, query: { limit: '2' } });
    unauthorized = await call(getBranch, { path: '/v1/branch' });
    notAllowed = await call(fallback, { path: '/v1/members', method: 'POST' });
  });

  it('the unchanged responses pass', () => {
    for (const response of [branch, members, unauthorized, notAllowed])
      expect(() => expectToMatchContract(response)).not.toThrow();
  });

  it('a missing required field', () => {
    const changed = withBody(branch, (json) => delete json.currency);
    expect(contractViolations(changed)).toEqual(["body: must have required property 'currency'"]);
    expect(() => expectToMatchContract(changed)).toThrow(/GET \/v1\/branch → 200 does not match docs\/openapi\.json/);
  });

  it('a missing field in a list item', () => {
    const changed = withBody(members, (json) => delete json.data[1].email);
    expect(contractViolations(changed)).toEqual(["body/data/1: must have required property 'email'"]);
  });

  it('an undocumented extra field', () => {
    const changed = withBody(branch, (json) => (json.internal_note = 'x'));
    expect(contractViolations(changed)).toEqual(["body: must NOT have additional properties 'internal_note'"]);
  });

  it('a field of the wrong type or format', () => {
    expect(contractViolations(withBody(members, (json) => (json.has_more = 'yes')))).toEqual([
      'body/has_more: must be boolean',
    ]);
    expect(contractViolations(withBody(branch, (json) => (json.created_at = '15/01/2024')))).toContain(
      'body/created_at: must match format "date-time"',
    );
    expect(contractViolations(withBody(members, (json) => (json.data[0].role = 'admin')))).toEqual([
      'body/data/0/role: must be equal to one of the allowed values: ["owner","manager","staff"]',
    ]);
  });

  it('a status the operation does not document', () => {
    expect(contractViolations({ ...branch, statusCode: 201 })).toEqual([
      'status 201 is not documented for operation GetBranch (GET /v1/branch); documented: 200, 401, 403, 404, 429, 431, 500, 503',
    ]);
    expect(contractViolations({ ...branch, method: 'GET', path: '/v2/branch' })).toEqual([
      'status 200 is not documented for an unknown path; documented: 404, 431, 500',
    ]);
    expect(contractViolations({ ...notAllowed, statusCode: 404 })).toEqual([
      'status 404 is not documented for /v1/members with method POST (not documented); documented: 405, 431, 500',
    ]);
    // A 400 where the operation takes no query parameter, and a 404 on a list, are not documented either.
    expect(contractViolations({ ...branch, statusCode: 400 })[0]).toMatch(/^status 400 is not documented/);
  });

  it('an error code that does not belong to the status', () => {
    const changed = withBody(unauthorized, (json) => (json.error.code = 'insufficient_scope'));
    expect(contractViolations(changed)).toEqual([
      'body/error/code: must be equal to one of the allowed values: ' +
        '["missing_api_key","invalid_api_key","expired_api_key","revoked_api_key","disabled_api_key"]',
    ]);
  });

  it('an error body in another shape', () => {
    const changed = { ...unauthorized, body: JSON.stringify({ message: 'Unauthorized' }) };
    expect(contractViolations(changed)).toEqual([
      "body: must have required property 'error'",
      "body: must NOT have additional properties 'message'",
    ]);
  });

  it('a missing header', () => {
    expect(contractViolations(withoutHeader(branch, 'X-Request-Id'))).toEqual([
      "headers: must have required property 'x-request-id'",
    ]);
    expect(contractViolations(withoutHeader(unauthorized, 'WWW-Authenticate'))).toEqual([
      "headers: must have required property 'www-authenticate'",
    ]);
    expect(contractViolations(withoutHeader(notAllowed, 'Allow'))).toEqual([
      "headers: must have required property 'allow'",
    ]);
  });

  it('a header with the wrong value', () => {
    expect(contractViolations({ ...branch, headers: { ...branch.headers, 'Cache-Control': 'max-age=60' } })).toEqual([
      'headers/cache-control: must be equal to constant: "no-store"',
    ]);
    expect(
      contractViolations({ ...unauthorized, headers: { ...unauthorized.headers, 'WWW-Authenticate': 'Basic' } }),
    ).toEqual([expect.stringMatching(/^headers\/www-authenticate: must match pattern/)]);
    expect(contractViolations({ ...branch, headers: { ...branch.headers, 'Content-Type': 'text/plain' } })).toEqual([
      'headers/content-type: "text/plain" is not one of "application/json; charset=utf-8"',
    ]);
  });

  it('a header the document says is absent (an unmatched request answered before any key is read)', () => {
    const withKeyHeaders = {
      ...notAllowed,
      headers: { ...notAllowed.headers, RateLimit: '"key";r=4;t=1', 'Api-Key-Expires': '2030-01-01T00:00:00.000Z' },
    };
    expect(contractViolations(withKeyHeaders)).toEqual([
      'headers/ratelimit: documented as absent from this response',
      'headers/api-key-expires: documented as absent from this response',
    ]);
  });

  it('a body that is not JSON', () => {
    expect(contractViolations({ ...branch, body: '<html>' })).toEqual(['body: not JSON: <html>']);
  });
});

describe('warmContract', () => {
  it('compiles the body validators of every status of every operation up front', () => {
    const contract = createContract();
    expect(contract.validator.statusBasedResponseValidators).toEqual({});
    warmContract(contract);
    const compiled = contract.validator.statusBasedResponseValidators;
    expect(
      Object.fromEntries(Object.entries(compiled).map(([id, byStatus]) => [id, Object.keys(byStatus ?? {})])),
    ).toEqual({
      GetBranch: ['200', '401', '403', '404', '429', '431', '500', '503'],
      ListMembers: ['200', '400', '401', '403', '429', '431', '500', '503'],
      ListPaymentProviders: ['200', '400', '401', '403', '429', '431', '500', '503'],
      GetPaymentProvider: ['200', '401', '403', '404', '429', '431', '500', '503'],
      ReportSecretScanning: ['200', '400', '401', '413', '431', '500', '503'],
    });
  });
});
