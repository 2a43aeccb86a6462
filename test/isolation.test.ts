/**
 * A key sees its own branch and nothing else: another branch's provider is the same 404 as an
 * unknown one, lists hold only the key's branch, and a cursor cannot cross branches or lists.
 */
import { handler as getBranch } from '../functions/get-branch';
import { handler as getProvider } from '../functions/get-payment-provider';
import { handler as listMembers } from '../functions/list-members';
import { handler as listProviders } from '../functions/list-payment-providers';
import { encodeCursor } from '../shared/api/http/pagination';
import { mainBranch, otherBranch } from './support/fixtures';
import { expectError, invoke, usageOf, type InvokeResult, setUpBranches } from './support/harness';

let key: string;
let otherKey: string;

beforeAll(async () => {
  ({ key, otherKey } = await setUpBranches());
});

/** Raw path segment as sent on the wire; API Gateway hands the handler the decoded value. */
const provider = (segment: string, withKey = key) =>
  invoke(getProvider, {
    path: `/v1/payment-providers/${segment}`,
    pathParameters: { id: segment },
    key: withKey,
  });

/** What a caller can compare between two responses: all but the request id and the key's remaining calls. */
const comparable = (res: InvokeResult) => {
  const { 'X-Request-Id': _id, RateLimit: _left, ...headers } = res.headers;
  return { status: res.statusCode, headers, body: { ...res.json, error: { ...res.json.error, request_id: '-' } } };
};

describe('a payment provider of another branch', () => {
  it('is exactly the 404 of an id that does not exist, and of an inactive provider', async () => {
    const unknown = await provider('pp_does_not_exist');
    expectError(unknown, 404, 'not_found');
    for (const res of [
      await provider('pp_other_only'), // active, in the other branch only
      await provider('pp_paypal_old'), // inactive, in this branch
      await provider('pp_klarna'), // inactive, in this branch
      await provider('br_other'), // another branch's id
      await provider('not%20an%20id'), // no provider could have this id
      await provider('x'.repeat(65)),
      await provider('..'),
      await provider('pp_other_only%2F..'),
    ]) {
      expect(comparable(res)).toEqual(comparable(unknown));
    }
  });

  it('is the same 404 the other way round', async () => {
    const unknown = await provider('pp_does_not_exist', otherKey);
    expect(comparable(await provider('pp_adyen', otherKey))).toEqual(comparable(unknown));
    expect(comparable(await provider('pp_mollie', otherKey))).toEqual(comparable(unknown));
  });

  it('with the same id as one of this branch answers this branch’s provider', async () => {
    expect((await provider('pp_stripe')).json).toMatchObject({ id: 'pp_stripe', name: 'Stripe' });
    expect((await provider('pp_stripe', otherKey)).json).toMatchObject({
      id: 'pp_stripe',
      name: 'Other branch Stripe',
    });
  });
});

describe('lists', () => {
  it('hold only the key’s branch', async () => {
    const ids = (res: InvokeResult) => res.json.data.map((item: { id: string }) => item.id);
    const main = await invoke(listMembers, { path: '/v1/members', key, query: { limit: '100' } });
    expect(ids(main)).toEqual(mainBranch.members.map((member) => member.id));
    expect(ids(await invoke(listMembers, { path: '/v1/members', key: otherKey }))).toEqual(['mem_other']);
    expect(ids(await invoke(listProviders, { path: '/v1/payment-providers', key: otherKey }))).toEqual([
      'pp_other_only',
      'pp_stripe',
    ]);
    expect((await invoke(getBranch, { path: '/v1/branch', key: otherKey })).json.id).toBe('br_other');
  });
});

describe('a cursor', () => {
  it('from another branch’s list is a 400, whichever way round', async () => {
    const other = await invoke(listProviders, { path: '/v1/payment-providers', key: otherKey, query: { limit: '1' } });
    expect(other.json.next_cursor).toEqual(expect.any(String));
    const res = await invoke(listProviders, {
      path: '/v1/payment-providers',
      key,
      query: { cursor: other.json.next_cursor },
    });
    expectError(res, 400, 'invalid_request');

    const mine = await invoke(listMembers, { path: '/v1/members', key, query: { limit: '1' } });
    const back = await invoke(listMembers, {
      path: '/v1/members',
      key: otherKey,
      query: { cursor: mine.json.next_cursor },
    });
    expectError(back, 400, 'invalid_request');
  });

  it('built for another branch (even one naming that branch’s own item) is a 400', async () => {
    for (const cursor of [
      encodeCursor('members', otherBranch.id, 'mem_other'),
      encodeCursor('members', otherBranch.id, 'mem_05'),
      encodeCursor('payment_providers', mainBranch.id, 'mem_05'),
    ]) {
      expectError(await invoke(listMembers, { path: '/v1/members', key, query: { cursor } }), 400, 'invalid_request');
    }
  });

  it('of the key’s own branch continues inside that branch only', async () => {
    const cursor = encodeCursor('members', mainBranch.id, 'mem_20');
    const res = await invoke(listMembers, { path: '/v1/members', key, query: { cursor } });
    expect(res.json.data.map((item: { id: string }) => item.id)).toEqual(['mem_21', 'mem_22', 'mem_23']);
  });
});

describe('usage records', () => {
  it('of one branch’s calls are stored under that branch only', async () => {
    const res = await invoke(getBranch, { path: '/v1/branch', key: otherKey });
    expect((await usageOf(otherBranch.id)).map((record) => record.request_id)).toContain(res.requestId);
    expect((await usageOf(mainBranch.id)).map((record) => record.request_id)).not.toContain(res.requestId);
  });
});
