/**
 * The route table: one entry per endpoint. The CDK stack makes one function and one API route
 * from each entry; the local gateway serves the same entries; each handler takes its scope and
 * route template from here.
 */
import type { Scope } from '../domain/schemas';
import { ACTIVE_PROVIDERS_INDEX, type TableNames } from '../data/tables';

/** The DynamoDB calls the functions make, by their IAM action names. */
export type DynamoDbAction =
  | 'dynamodb:GetItem'
  | 'dynamodb:BatchGetItem'
  | 'dynamodb:Query'
  | 'dynamodb:PutItem'
  | 'dynamodb:UpdateItem'
  | 'dynamodb:Scan';

/**
 * Calls a function makes on one table: on the table itself or, with `index`, on that index only.
 * The CDK stack grants each function exactly the access of its route (lib/infra/api-function.ts).
 */
export interface TableAccess {
  readonly table: keyof TableNames;
  readonly actions: readonly DynamoDbAction[];
  /** @default - the table itself, not its indexes */
  readonly index?: string;
}

export interface RouteDefinition {
  /** Stable id: the CDK construct id and the OpenAPI operationId. */
  readonly id: 'GetBranch' | 'ListMembers' | 'ListPaymentProviders' | 'GetPaymentProvider';
  readonly method: 'GET';
  /** Path template relative to {base_url}, in API Gateway syntax. */
  readonly path: string;
  readonly scope: Scope;
  /** Handler module, relative to the project root; it exports `handler`. */
  readonly entry: string;
  readonly summary: string;
  /** What the handler reads from branch data; the middleware chain's own calls are `CHAIN_TABLE_ACCESS`. */
  readonly data: Omit<TableAccess, 'table'>;
}

export type RouteId = RouteDefinition['id'];

/**
 * An endpoint function's timeout, in seconds: its DynamoDB calls, each within its deadline, end
 * inside it (docs/decisions.md "Deadlines and timeouts"). The stack sets it; the local run's
 * context counts down from it, as Lambda's does.
 */
export const ENDPOINT_TIMEOUT_SECONDS = 10;

/** The stage every route is served under: `{base_url}` ends in `/api`, deployed and locally (docs/decisions.md "HTTP contract"). */
export const API_STAGE = 'api';

/** Every endpoint is a GET that needs the `read` scope: the API is read-only. */
export const routes: readonly RouteDefinition[] = (
  [
    {
      id: 'GetBranch',
      path: '/v1/branch',
      entry: 'functions/get-branch.ts',
      summary: 'The branch the key belongs to',
      data: { actions: ['dynamodb:GetItem'] },
    },
    {
      id: 'ListMembers',
      path: '/v1/members',
      entry: 'functions/list-members.ts',
      summary: "The branch's team members",
      data: { actions: ['dynamodb:Query'] },
    },
    {
      id: 'ListPaymentProviders',
      path: '/v1/payment-providers',
      entry: 'functions/list-payment-providers.ts',
      summary: "The branch's active payment providers",
      data: { actions: ['dynamodb:Query'], index: ACTIVE_PROVIDERS_INDEX },
    },
    {
      id: 'GetPaymentProvider',
      path: '/v1/payment-providers/{id}',
      entry: 'functions/get-payment-provider.ts',
      summary: 'One active payment provider of the branch',
      data: { actions: ['dynamodb:GetItem'] },
    },
  ] satisfies Omit<RouteDefinition, 'method' | 'scope'>[]
).map((route): RouteDefinition => ({ ...route, method: 'GET', scope: 'read' }));

/**
 * The one route that takes no API key: GitHub's secret scanning reports, verified by their own
 * signature (docs/decisions.md "Leaked keys"). A function of its own, with its own grants.
 */
export interface ReportRouteDefinition {
  readonly id: 'ReportSecretScanning';
  readonly method: 'POST';
  readonly path: string;
  readonly entry: string;
  readonly summary: string;
  /** Every table call its function makes. */
  readonly access: readonly TableAccess[];
  /** Its function's timeout, in seconds: the stack's and the local run's (ENDPOINT_TIMEOUT_SECONDS). */
  readonly timeoutSeconds: number;
}

export const secretScanningRoute: ReportRouteDefinition = {
  id: 'ReportSecretScanning',
  method: 'POST',
  path: '/security/secret-scanning',
  entry: 'functions/secret-scanning.ts',
  summary: 'Report leaked API keys (GitHub secret scanning partner program)',
  // Which tokens are keys, 100 hashes a batch read; then each live key by hash and its revocation
  // (the `leaked` action); its entry copied to the activity table, then cleared from the key item.
  access: [
    { table: 'keys', actions: ['dynamodb:BatchGetItem', 'dynamodb:GetItem', 'dynamodb:UpdateItem'] },
    { table: 'activity', actions: ['dynamodb:PutItem'] },
  ],
  // Under API Gateway's 30 s integration limit, so the gateway relays the answer (docs/decisions.md "Leaked keys").
  timeoutSeconds: 28,
};

/** The timeout of the function behind a route key (`$default`: the catch-all), in seconds. */
export const timeoutSecondsOf = (key: string): number =>
  key === routeKey(secretScanningRoute) ? secretScanningRoute.timeoutSeconds : ENDPOINT_TIMEOUT_SECONDS;

/** Any route the gateway serves. */
export type AnyRouteDefinition = RouteDefinition | ReportRouteDefinition;

/** The catch-all function: unknown paths (404) and known paths with another method (405). */
export const fallbackEntry = 'functions/fallback.ts';

/** What every endpoint's middleware chain calls: the key lookup, the rate-limit counter and the usage record. */
export const CHAIN_TABLE_ACCESS: readonly TableAccess[] = [
  { table: 'keys', actions: ['dynamodb:GetItem'] },
  { table: 'usage', actions: ['dynamodb:PutItem'] },
  // The rate-limit counter: one UpdateItem ADD per counted call (docs/decisions.md "Rate limits").
  { table: 'rateLimits', actions: ['dynamodb:UpdateItem'] },
];

/** Every table call a route's function makes: its chain's and its handler's. */
export const tableAccessOf = (route: RouteDefinition): readonly TableAccess[] => [
  ...CHAIN_TABLE_ACCESS,
  { table: 'branchData', ...route.data },
];

export const routeKey = (route: AnyRouteDefinition): string => `${route.method} ${route.path}`;

export const getRoute = (id: RouteId): RouteDefinition => {
  const route = routes.find((candidate) => candidate.id === id);
  if (!route) throw new Error(`Unknown route ${id}`);
  return route;
};

const compiled = [...routes, secretScanningRoute].map((route: AnyRouteDefinition) => {
  const names: string[] = [];
  const source = route.path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{(\w+)\}/g, (_m, name: string) => {
    names.push(name);
    return '([^/]+)';
  });
  return { route, names, pattern: new RegExp(`^${source}$`) };
});

export type RouteMatch =
  | { kind: 'route'; route: AnyRouteDefinition; pathParameters: Record<string, string> }
  | { kind: 'method_not_allowed'; allow: string }
  | { kind: 'not_found' };

/**
 * The path relative to {base_url}: API Gateway's rawPath carries the stage as its first segment
 * (none on the `$default` stage). The one place the stage prefix is stripped.
 */
export const pathWithinStage = (rawPath: string, stage: string | undefined): string => {
  const prefix = stage && stage !== '$default' ? `/${stage}` : '';
  return prefix && rawPath.startsWith(`${prefix}/`) ? rawPath.slice(prefix.length) : rawPath;
};

/** Matches a path relative to {base_url} (no stage prefix) as API Gateway would. */
export const matchRoute = (method: string, path: string): RouteMatch => {
  const allowed: string[] = [];
  for (const { route, names, pattern } of compiled) {
    const match = pattern.exec(path);
    if (!match) continue;
    if (route.method !== method) {
      allowed.push(route.method);
      continue;
    }
    const pathParameters: Record<string, string> = {};
    names.forEach((name, index) => {
      pathParameters[name] = match[index + 1] ?? '';
    });
    return { kind: 'route', route, pathParameters };
  }
  return allowed.length > 0
    ? { kind: 'method_not_allowed', allow: [...new Set(allowed)].join(', ') }
    : { kind: 'not_found' };
};
