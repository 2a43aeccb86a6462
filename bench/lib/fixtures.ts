/**
 * What every part of the benchmark serves and asks for: the demo branch of seed/demo.json, a
 * `read` key for the canned DynamoDB, and one request per route (paths relative to {base_url}).
 */
import { readFileSync } from 'node:fs';
import { generateApiKey, hashApiKey } from '../../shared/domain/api-key';
import type { SeedBranch, SeedFile } from '../../shared/domain/schemas';
import { DEMO_SEED_FILE, PROJECT_ROOT } from '../../lib/project-paths';
import { routeKey, routes, type RouteId } from '../../shared/api/routes';

export { PROJECT_ROOT };

export const demoBranch: SeedBranch = (JSON.parse(readFileSync(DEMO_SEED_FILE, 'utf8')) as SeedFile).branches[0]!;
const providerId = demoBranch.payment_providers.find((provider) => provider.active)!.id;

export interface Endpoint {
  name: RouteId;
  /** Relative to {base_url}. */
  path: string;
  routeKey: string;
  pathParameters?: Record<string, string>;
}

/** One request per route of the route table; the one path parameter is an active demo provider. */
export const ENDPOINTS: readonly Endpoint[] = routes.map((route) => ({
  name: route.id,
  path: route.path.replace('{id}', providerId),
  routeKey: routeKey(route),
  ...(route.path.includes('{id}') ? { pathParameters: { id: providerId } } : {}),
}));

/** A key value and its stored record, for the canned DynamoDB (bench/lib/responder.ts). */
export const benchKey = (() => {
  const value = generateApiKey();
  const hash = hashApiKey(value);
  return {
    value,
    hash,
    item: {
      key_hash: hash,
      key_id: 'key_bench0000000000000000',
      branch_id: demoBranch.id,
      name: 'bench key',
      scopes: ['read'],
      start: value.slice(0, 8),
      created_at: '2025-01-01T00:00:00.000Z',
    },
  };
})();

/** The branch-data items as the seed stores them. */
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

/** What Lambda gives a function of the stack: credentials in the environment, tables, Powertools. */
export const LAMBDA_ENV: Record<string, string> = {
  AWS_REGION: 'eu-west-1',
  AWS_ACCESS_KEY_ID: 'AKIDBENCHMARK00000000',
  AWS_SECRET_ACCESS_KEY: 'bench-secret-access-key',
  AWS_SESSION_TOKEN: 'bench-session-token',
  AWS_LAMBDA_FUNCTION_NAME: 'branch-api-bench',
  AWS_LAMBDA_FUNCTION_MEMORY_SIZE: '512',
  AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x',
  KEYS_TABLE: 'bench-keys',
  USAGE_TABLE: 'bench-usage',
  BRANCH_DATA_TABLE: 'bench-branch-data',
  RATE_LIMITS_TABLE: 'bench-rate-limits',
  POWERTOOLS_SERVICE_NAME: 'branch-api',
  POWERTOOLS_METRICS_NAMESPACE: 'BranchApi',
  POWERTOOLS_LOG_LEVEL: 'INFO',
};
