/**
 * Branches for the reliability suites: any number of them, each with its own members and
 * providers, plus ids that every branch shares (`mem_01`, `pp_stripe`) so a cross-branch read
 * of a shared id must still answer with the key's own branch.
 */
import type { SeedBranch } from '../../shared/domain/schemas';

const pad = (n: number) => String(n).padStart(2, '0');

/** Branch number `n` (1-based): `br_rel_<n>`, 7 members, 3 active and 2 inactive providers. */
export const reliabilityBranch = (n: number): SeedBranch => ({
  id: `br_rel_${n}`,
  name: `Reliability Branch ${n}`,
  business_name: `Business ${n} B.V.`,
  timezone: 'Europe/Amsterdam',
  currency: 'EUR',
  address: { line1: `Street ${n}`, city: `City${n}`, postal_code: `10${pad(n)} AB`, country: 'NL' },
  created_at: '2024-01-15T09:00:00.000Z',
  members: Array.from({ length: 7 }, (_, i) => ({
    // mem_01 exists in every branch; the others are unique to this one.
    id: i === 0 ? 'mem_01' : `mem_b${n}_${pad(i + 1)}`,
    name: `Member ${i + 1} of branch ${n}`,
    email: `member${i + 1}.b${n}@example.com`,
    role: i === 0 ? ('owner' as const) : ('staff' as const),
    created_at: '2024-02-01T10:00:00.000Z',
  })),
  payment_providers: [
    { id: 'pp_stripe', provider: 'stripe', name: `Stripe of branch ${n}`, active: true },
    { id: `pp_b${n}_adyen`, provider: 'adyen', name: `Adyen of branch ${n}`, active: true },
    { id: `pp_b${n}_mollie`, provider: 'mollie', name: `Mollie of branch ${n}`, active: true },
    { id: `pp_b${n}_old`, provider: 'paypal', name: `PayPal (old) of branch ${n}`, active: false },
    { id: 'pp_shared_old', provider: 'klarna', name: `Klarna (old) of branch ${n}`, active: false },
  ].map((provider) => ({ ...provider, created_at: '2024-03-01T00:00:00.000Z' })),
});

export const reliabilityBranches = (count: number): SeedBranch[] =>
  Array.from({ length: count }, (_, i) => reliabilityBranch(i + 1));

export const activeProviderIds = (branch: SeedBranch): string[] =>
  branch.payment_providers.filter((provider) => provider.active).map((provider) => provider.id);
