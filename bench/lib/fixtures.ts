/**
 * What every part of the benchmark serves and asks for: the demo branch of seed/demo.json, one
 * `read` key for it, and the four endpoint requests (paths relative to {base_url}).
 */
import { readFileSync } from 'node:fs';
import { generateApiKey, hashApiKey } from '../../shared/domain/api-key';
import type { SeedBranch, SeedFile } from '../../shared/domain/schemas';
import { DEMO_SEED_FILE, PROJECT_ROOT } from '../../lib/project-paths';
import { routeKey, routes, type RouteId } from '../../shared/api/routes';

export { PROJECT_ROOT };

export const seedFile = DEMO_SEED_FILE;
export const demoBranch: SeedBranch = (JSON.parse(readFileSync(seedFile, 'utf8')) as SeedFile).branches[0]!;
/** An active provider of the demo branch (GET /v1/payment-providers/{id}). */
export const providerId = demoBranch.payment_providers.find((provider) => provider.active)!.id;

export type EndpointName = RouteId;

export interface Endpoint {
  name: EndpointName;
  /** Relative to {base_url}. */
  path: string;
  routeKey: string;
  pathParameters?: Record<string, string>;
}

/** One request per route of the route table; the one path parameter is the demo provider's id. */
export const ENDPOINTS: readonly Endpoint[] = routes.map((route) => {
  const pathParameters = route.path.includes('{id}') ? { id: providerId } : undefined;
  return {
    name: route.id,
    path: route.path.replace('{id}', providerId),
    routeKey: routeKey(route),
    ...(pathParameters ? { pathParameters } : {}),
  };
});

/**
 * Keys a load spreads its requests over, each with BENCH_KEY_RATE_LIMIT: the largest limit still
 * counted call by call (shared/domain/rate-limit.ts LEASE_ABOVE; above it a key counts in blocks
 * and skips most counter writes), so every request makes the deployment's four calls, and 4 keys
 * admit 2,000 requests/s, well above the fastest load here. The deployment's default (50/s) would
 * need 12 or more keys for these rates, each another rollup item per batch for the aggregator:
 * docs/capacity.md "Local stack" gives that figure too.
 */
export const BENCH_KEYS = 4;
export const BENCH_KEY_RATE_LIMIT = '500/s';

/** A key value and its stored record, for the canned responder (the e2e parts create a real one). */
export const benchKey = (() => {
  const value = generateApiKey();
  return {
    value,
    hash: hashApiKey(value),
    item: {
      key_hash: hashApiKey(value),
      key_id: 'key_bench0000000000000000',
      branch_id: demoBranch.id,
      name: 'bench key',
      scopes: ['read'],
      start: value.slice(0, 8),
      created_at: '2025-01-01T00:00:00.000Z',
    },
  };
})();

/** The branch-data items as BranchDataRepository.putBranch stores them. */
export const branchItems = (() => {
  const { members, payment_providers: providers, ...details } = demoBranch;
  const base = { branch_id: demoBranch.id };
  return {
    branch: { ...base, sk: 'BRANCH', ...details },
    members: members.map((member) => ({ ...base, sk: `MEMBER#${member.id}`, ...member })),
    activeProviders: providers
      .filter((provider) => provider.active)
      .map((provider) => ({ ...base, sk: `PROVIDER#${provider.id}`, ...provider, active_provider_id: provider.id })),
  };
})();
