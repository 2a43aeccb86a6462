/**
 * Every row of the error table (shared/api/errors.ts, docs/decisions.md), through the real handlers: status, code, the body shape
 * {error:{code,message,request_id}}, the common headers and the row's own headers.
 */
import { handler as getBranch } from '../functions/get-branch';
import { handler as fallback } from '../functions/fallback';
import { handler as getProvider } from '../functions/get-payment-provider';
import { handler as listMembers } from '../functions/list-members';
import { mainBranch } from './support/fixtures';
import {
  CHALLENGE,
  closedPortEndpoint,
  createKey,
  expectCommonHeaders,
  expectError,
  fixtureKeys,
  headerOf,
  invoke,
  loadService,
  tableNames,
  type InvokeResult,
  setUpBranches,
} from './support/harness';

let key: string;
let requests: Record<string, () => Promise<InvokeResult>>;

beforeAll(async () => {
  ({ key } = await setUpBranches());
  const { key: expired } = await createKey({ expiresAt: new Date(Date.now() - 1000) });
  const { key: revoked, record } = await createKey();
  await fixtureKeys.revoke(record.key_id);
  const { key: noRead } = await createKey({ scopes: ['write'] });
  const { key: orphan } = await createKey({ branchId: 'br_gone' });
  // A container whose database refuses connections, and one whose branch-data table does not exist.
  const unreachable = await loadService({ DYNAMODB_ENDPOINT: await closedPortEndpoint() });
  const misconfigured = await loadService({ BRANCH_DATA_TABLE: 'no-such-branch-data-table' });
  requests = {
    missing: () => invoke(getBranch, { path: '/v1/branch' }),
    invalid: () => invoke(getBranch, { path: '/v1/branch', key: 'wsk_nope' }),
    expired: () => invoke(getBranch, { path: '/v1/branch', key: expired }),
    revoked: () => invoke(getBranch, { path: '/v1/branch', key: revoked }),
    noRead: () => invoke(getBranch, { path: '/v1/branch', key: noRead }),
    badLimit: () => invoke(listMembers, { path: '/v1/members', key, query: { limit: '0' } }),
    unknownProvider: () =>
      invoke(getProvider, { path: '/v1/payment-providers/pp_nope', pathParameters: { id: 'pp_nope' }, key }),
    branchGone: () => invoke(getBranch, { path: '/v1/branch', key: orphan }),
    unknownRoute: () => invoke(fallback, { path: '/v1/nothing-here', key }),
    wrongMethod: () => invoke(fallback, { method: 'POST', path: '/v1/members', key }),
    wrongMethodOnItem: () => invoke(fallback, { method: 'DELETE', path: '/v1/payment-providers/pp_stripe' }),
    unreachable: () => invoke(unreachable.getBranch, { path: '/v1/branch', key }),
    missingTable: () => invoke(misconfigured.getBranch, { path: '/v1/branch', key }),
  };
});

/** [request, status, code, the headers the row adds (undefined: must be absent)] */
const rows: [string, number, string, Record<string, string | undefined>][] = [
  ['missing', 401, 'missing_api_key', { 'WWW-Authenticate': CHALLENGE.noToken }],
  ['invalid', 401, 'invalid_api_key', { 'WWW-Authenticate': CHALLENGE.invalidToken }],
  ['expired', 401, 'expired_api_key', { 'WWW-Authenticate': CHALLENGE.invalidToken }],
  ['revoked', 401, 'revoked_api_key', { 'WWW-Authenticate': CHALLENGE.invalidToken }],
  ['noRead', 403, 'insufficient_scope', { 'WWW-Authenticate': CHALLENGE.insufficientScope }],
  ['badLimit', 400, 'invalid_request', {}],
  ['unknownProvider', 404, 'not_found', {}],
  ['branchGone', 404, 'not_found', {}],
  ['unknownRoute', 404, 'not_found', {}],
  ['wrongMethod', 405, 'method_not_allowed', { Allow: 'GET' }],
  ['wrongMethodOnItem', 405, 'method_not_allowed', { Allow: 'GET' }],
  ['unreachable', 503, 'service_unavailable', { 'Retry-After': '1' }],
  ['missingTable', 500, 'internal_error', {}],
];

describe.each(rows)('%s → %i %s', (name, status, code, own) => {
  let res: InvokeResult;
  beforeAll(async () => {
    res = await requests[name]!();
  });

  it('has the status, the code and exactly the error body shape', () => {
    expectError(res, status, code);
  });

  it('carries the common headers and its own, and no other row’s', () => {
    expectCommonHeaders(res);
    const expected = { 'WWW-Authenticate': undefined, Allow: undefined, 'Retry-After': undefined, ...own };
    for (const [header, value] of Object.entries(expected))
      expect([header, headerOf(res, header)]).toEqual([header, value]);
  });

  it('reveals no stack, SDK message or table name', () => {
    for (const secret of [
      'stack',
      '    at ',
      'Exception',
      'DynamoDB',
      'dynamo',
      'table',
      tableNames.keys,
      tableNames.branchData,
      'no-such-branch-data-table',
      'br_gone',
      'ECONNREFUSED',
      '127.0.0.1',
    ]) {
      expect(res.body.toLowerCase()).not.toContain(secret.toLowerCase());
    }
  });
});

describe('500 internal_error', () => {
  it('says nothing but that something went wrong', async () => {
    const res = await requests.missingTable!();
    expect(res.json.error.message).toBe('Something went wrong on our side.');
  });
});

describe('X-Request-Id', () => {
  it('is API Gateway’s request id on success and error alike', async () => {
    const ok = await invoke(getBranch, { path: '/v1/branch', key, requestId: 'req-ok-1' });
    const error = await invoke(getBranch, { path: '/v1/branch', requestId: 'req-401-1' });
    expect(headerOf(ok, 'x-request-id')).toBe('req-ok-1');
    expect(headerOf(error, 'x-request-id')).toBe('req-401-1');
    expect(error.json.error.request_id).toBe('req-401-1');
    expect(ok.json).toMatchObject({ id: mainBranch.id });
  });
});
