import { handler as getBranch } from '../functions/get-branch';
import { handler as getProvider } from '../functions/get-payment-provider';
import { handler as listMembers } from '../functions/list-members';
import { handler as listProviders } from '../functions/list-payment-providers';
import { mainBranch } from './support/fixtures';
import { invoke, setUpBranches } from './support/harness';

let key: string;

beforeAll(async () => {
  ({ key } = await setUpBranches());
});

describe('GET /v1/branch', () => {
  it('returns the branch the key belongs to', async () => {
    const res = await invoke(getBranch, { path: '/v1/branch', key });
    expect(res.statusCode).toBe(200);
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
  });
});

describe('GET /v1/members', () => {
  it('returns the first page of members in id order', async () => {
    const res = await invoke(listMembers, { path: '/v1/members', key, query: { limit: '5' } });
    expect(res.statusCode).toBe(200);
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
  });
});

describe('GET /v1/payment-providers', () => {
  it('lists only active providers', async () => {
    const res = await invoke(listProviders, { path: '/v1/payment-providers', key });
    expect(res.statusCode).toBe(200);
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
  });
});

describe('GET /v1/payment-providers/{id}', () => {
  it('returns one active provider', async () => {
    const res = await invoke(getProvider, {
      path: '/v1/payment-providers/pp_stripe',
      pathParameters: { id: 'pp_stripe' },
      key,
    });
    expect(res.statusCode).toBe(200);
    expect(res.json).toMatchObject({ id: 'pp_stripe', object: 'payment_provider', name: 'Stripe', active: true });
  });
});
