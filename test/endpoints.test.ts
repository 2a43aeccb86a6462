/** The 200 body of each endpoint, field by field, with the headers every response carries. */
import { handler as getBranch } from '../functions/get-branch';
import { handler as getProvider } from '../functions/get-payment-provider';
import { handler as listMembers } from '../functions/list-members';
import { handler as listProviders } from '../functions/list-payment-providers';
import { BranchSchema, MemberSchema, PaymentProviderSchema, listSchema } from '../shared/domain/schemas';
import { mainBranch } from './support/fixtures';
import {
  createKey,
  expectCommonHeaders,
  fixtureBranchData,
  headerOf,
  invoke,
  setUpBranches,
  type InvokeResult,
} from './support/harness';

let key: string;

beforeAll(async () => {
  ({ key } = await setUpBranches());
});

/** Table attributes that must never reach a response. */
const expectNoTableAttributes = (res: InvokeResult) => {
  for (const attribute of ['"branch_id"', '"sk"', '"active_provider_id"', '"key_hash"']) {
    expect(res.body).not.toContain(attribute);
  }
};

const expectOk = (res: InvokeResult) => {
  expect(res.statusCode).toBe(200);
  expectCommonHeaders(res);
  expect(headerOf(res, 'www-authenticate')).toBeUndefined();
  expectNoTableAttributes(res);
};

describe('GET /v1/branch', () => {
  it('returns the branch the key belongs to', async () => {
    const res = await invoke(getBranch, { path: '/v1/branch', key });
    expectOk(res);
    expect(res.json).toEqual({
      id: 'br_main',
      object: 'branch',
      name: mainBranch.name,
      business_name: mainBranch.business_name,
      timezone: 'Europe/Amsterdam',
      currency: 'EUR',
      address: mainBranch.address,
      created_at: mainBranch.created_at,
    });
    expect(BranchSchema.strict().safeParse(res.json).success).toBe(true);
  });
});

describe('GET /v1/members', () => {
  it('returns the first page of members in id order', async () => {
    const res = await invoke(listMembers, { path: '/v1/members', key, query: { limit: '5' } });
    expectOk(res);
    expect(res.json.object).toBe('list');
    expect(res.json.data.map((m: { id: string }) => m.id)).toEqual(['mem_01', 'mem_02', 'mem_03', 'mem_04', 'mem_05']);
    expect(res.json.data[0]).toEqual({
      id: 'mem_01',
      object: 'member',
      name: 'Member 01',
      email: 'member01@example.com',
      role: 'owner',
      created_at: '2024-02-01T10:00:00.000Z',
    });
    expect(res.json.has_more).toBe(true);
    expect(typeof res.json.next_cursor).toBe('string');
    expect(listSchema(MemberSchema.strict()).strict().safeParse(res.json).success).toBe(true);
  });

  it('returns every member on one page by default (50), with has_more false and no cursor', async () => {
    const res = await invoke(listMembers, { path: '/v1/members', key });
    expectOk(res);
    expect(res.json.data).toHaveLength(mainBranch.members.length);
    expect(res.json.data.at(-1)).toEqual({ ...mainBranch.members.at(-1), object: 'member' });
    expect(res.json).toMatchObject({ object: 'list', has_more: false, next_cursor: null });
  });
});

describe('GET /v1/payment-providers', () => {
  it('lists only active providers, in id order', async () => {
    const res = await invoke(listProviders, { path: '/v1/payment-providers', key });
    expectOk(res);
    expect(res.json).toEqual({
      object: 'list',
      data: [
        {
          id: 'pp_adyen',
          object: 'payment_provider',
          provider: 'adyen',
          name: 'Adyen',
          active: true,
          created_at: '2024-03-01T00:00:00.000Z',
        },
        {
          id: 'pp_mollie',
          object: 'payment_provider',
          provider: 'mollie',
          name: 'Mollie',
          active: true,
          created_at: '2024-03-04T00:00:00.000Z',
        },
        {
          id: 'pp_stripe',
          object: 'payment_provider',
          provider: 'stripe',
          name: 'Stripe',
          active: true,
          created_at: '2024-03-03T00:00:00.000Z',
        },
      ],
      has_more: false,
      next_cursor: null,
    });
    expect(listSchema(PaymentProviderSchema.strict()).strict().safeParse(res.json).success).toBe(true);
  });

  it('is an empty list for a branch with no active provider', async () => {
    await fixtureBranchData.putBranch({
      ...mainBranch,
      id: 'br_quiet',
      members: [],
      payment_providers: [{ id: 'pp_off', provider: 'stripe', name: 'Off', active: false }],
    });
    const { key: quiet } = await createKey({ branchId: 'br_quiet' });
    const providers = await invoke(listProviders, { path: '/v1/payment-providers', key: quiet });
    const members = await invoke(listMembers, { path: '/v1/members', key: quiet });
    for (const res of [providers, members]) {
      expectOk(res);
      expect(res.json).toEqual({ object: 'list', data: [], has_more: false, next_cursor: null });
    }
  });
});

describe('GET /v1/payment-providers/{id}', () => {
  it('returns one active provider', async () => {
    const res = await invoke(getProvider, {
      path: '/v1/payment-providers/pp_stripe',
      pathParameters: { id: 'pp_stripe' },
      key,
    });
    expectOk(res);
    expect(res.json).toEqual({
      id: 'pp_stripe',
      object: 'payment_provider',
      provider: 'stripe',
      name: 'Stripe',
      active: true,
      created_at: '2024-03-03T00:00:00.000Z',
    });
    expect(PaymentProviderSchema.strict().safeParse(res.json).success).toBe(true);
  });

  it('returns the same object as the list does', async () => {
    const list = await invoke(listProviders, { path: '/v1/payment-providers', key });
    for (const item of list.json.data as { id: string }[]) {
      const one = await invoke(getProvider, {
        path: `/v1/payment-providers/${item.id}`,
        pathParameters: { id: item.id },
        key,
      });
      expect(one.json).toEqual(item);
    }
  });
});
