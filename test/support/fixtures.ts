import type { SeedBranch } from '../../shared/domain/schemas';

const pad = (n: number) => String(n).padStart(2, '0');

/** A branch with 23 members (several pages), 3 active and 2 inactive payment providers. */
export const mainBranch: SeedBranch = {
  id: 'br_main',
  name: 'Amsterdam Centraal',
  business_name: 'Example Coffee B.V.',
  timezone: 'Europe/Amsterdam',
  currency: 'EUR',
  address: { line1: 'Stationsplein 1', city: 'Amsterdam', postal_code: '1012 AB', country: 'NL' },
  created_at: '2024-01-15T09:00:00.000Z',
  members: Array.from({ length: 23 }, (_, i) => ({
    id: `mem_${pad(i + 1)}`,
    name: `Member ${pad(i + 1)}`,
    email: `member${pad(i + 1)}@example.com`,
    role: i === 0 ? ('owner' as const) : i < 3 ? ('manager' as const) : ('staff' as const),
    created_at: `2024-02-${pad((i % 28) + 1)}T10:00:00.000Z`,
  })),
  payment_providers: [
    { id: 'pp_adyen', provider: 'adyen', name: 'Adyen', active: true, created_at: '2024-03-01T00:00:00.000Z' },
    {
      id: 'pp_paypal_old',
      provider: 'paypal',
      name: 'PayPal (old)',
      active: false,
      created_at: '2024-03-02T00:00:00.000Z',
    },
    { id: 'pp_stripe', provider: 'stripe', name: 'Stripe', active: true, created_at: '2024-03-03T00:00:00.000Z' },
    { id: 'pp_mollie', provider: 'mollie', name: 'Mollie', active: true, created_at: '2024-03-04T00:00:00.000Z' },
    { id: 'pp_klarna', provider: 'klarna', name: 'Klarna', active: false, created_at: '2024-03-05T00:00:00.000Z' },
  ],
};

/** Another branch, to prove a key never sees it. */
export const otherBranch: SeedBranch = {
  id: 'br_other',
  name: 'Rotterdam Centraal',
  business_name: 'Other Tea B.V.',
  timezone: 'Europe/Amsterdam',
  currency: 'EUR',
  address: { line1: 'Stationsplein 2', city: 'Rotterdam', postal_code: '3013 AJ', country: 'NL' },
  created_at: '2024-01-16T09:00:00.000Z',
  members: [
    {
      id: 'mem_other',
      name: 'Other Member',
      email: 'other@example.com',
      role: 'owner',
      created_at: '2024-02-01T00:00:00.000Z',
    },
  ],
  payment_providers: [
    {
      id: 'pp_other_only',
      provider: 'stripe',
      name: 'Other Stripe',
      active: true,
      created_at: '2024-03-01T00:00:00.000Z',
    },
    {
      id: 'pp_stripe',
      provider: 'stripe',
      name: 'Other branch Stripe',
      active: true,
      created_at: '2024-03-01T00:00:00.000Z',
    },
  ],
};
