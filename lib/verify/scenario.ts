/**
 * The scenario the verifier plays on a running assembly: its data and keys, the calls it makes
 * and the answers the contract expects, and the stream records the writes would produce.
 */
import { readFileSync } from 'node:fs';
import type { DynamoDBClient, StreamViewType } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Params } from 'hono/router';
import { TrieRouter } from 'hono/router/trie-router';
import { generateApiKey } from '../../shared/domain/api-key';
import { createRepositories, type Repositories } from '../../shared/data/repositories';
import type { CreateKeyInput } from '../../shared/data/repositories/keys';
import { API_TABLES, TABLE_ENV, type ApiTableNames } from '../../shared/data/tables';
import { readSeedFile } from '../operator/seed';
import { sequenceNumber, streamRecord, type StreamChange } from '../local/stream-events';
import { matchesPattern, type Assembly, type Json, type TemplateRoute, type TemplateTable } from './assembly';
import type { CapturedWrite } from './recording-proxy';
import { DEMO_SEED_FILE, OPENAPI_FILE } from '../project-paths';
import { REPORT_ROUTE_KEY, reportCases, type Signer } from './leak-scenario';

export interface Case {
  label: string;
  method: string;
  path: string;
  query?: Record<string, string>;
  key?: string;
  expected: number;
  /** The documented error code (shared/api/errors.ts) an error answer must carry. */
  code?: string;
  /** Request headers and body beyond the key (the secret scanning report, lib/verify/leak-scenario.ts). */
  headers?: Record<string, string>;
  body?: string;
}

/** API Gateway's route selection over the template's route keys, `$default` when none matches. */
export const routeMatcher = (routes: readonly TemplateRoute[]) => {
  const router = new TrieRouter<TemplateRoute>();
  for (const route of routes.filter((candidate) => candidate.routeKey !== '$default')) {
    const [method = '', template = ''] = route.routeKey.split(' ');
    router.add(method, template.replace(/\{(\w+)\}/g, ':$1'), route);
  }
  const fallback = routes.find((route) => route.routeKey === '$default');
  return (method: string, path: string) => {
    const [[route, pathParameters] = []] = router.match(method, path)[0] as [TemplateRoute, Params][];
    return route ? { route, pathParameters } : fallback && { route: fallback, pathParameters: undefined };
  };
};

/** The API's table names as functions read them from their environment (the first function that names them all). */
export const tableNamesOf = (assembly: Assembly): ApiTableNames | undefined => {
  for (const fn of assembly.functions) {
    const names = Object.fromEntries(API_TABLES.map((name) => [name, fn.environment[TABLE_ENV[name]]]));
    if (Object.values(names).every((value) => value !== undefined)) return names as unknown as ApiTableNames;
  }
  return undefined;
};

/** Query parameters each documented operation takes (a list takes `limit` and `cursor`). */
const listOperations = (): Set<string> => {
  const document = JSON.parse(readFileSync(OPENAPI_FILE, 'utf8')) as Json;
  const lists = new Set<string>();
  for (const [path, item] of Object.entries<Json>(document.paths)) {
    for (const [method, operation] of Object.entries<Json>(item)) {
      const parameters = JSON.stringify(operation.parameters ?? []);
      if (parameters.includes('Limit') || parameters.includes('"limit"')) lists.add(`${method.toUpperCase()} ${path}`);
    }
  }
  return lists;
};

/** `error.code` of an error body, if it has one. */
export const errorCodeOf = (body: string | undefined): string | undefined => {
  try {
    const code = (JSON.parse(body ?? '') as { error?: { code?: unknown } }).error?.code;
    return typeof code === 'string' ? code : undefined;
  } catch {
    return undefined;
  }
};

/** The keys the scenario calls with, one per way a key can be refused (and one that is accepted). */
type ScenarioKeys = Record<
  'read' | 'noScope' | 'expired' | 'revoked' | 'disabled' | 'elsewhere' | 'limited' | 'leaked',
  string
>;

const createKeys = async (repositories: Repositories, branchId: string): Promise<ScenarioKeys> => {
  const make = (name: string, extra: Partial<CreateKeyInput> = {}) =>
    repositories.keys.create({ branchId, scopes: ['read'], name, ...extra });
  const created = {
    read: await make('verify'),
    noScope: await make('verify', { scopes: ['team:read'] }),
    // Stored with an expiry in the past: the repository takes any time (the operator tooling checks).
    expired: await make('verify', { expiresAt: new Date(Date.now() - 60_000) }),
    revoked: await make('verify revoked'),
    disabled: await make('verify disabled'),
    // Allowed only from a documentation range (RFC 5737); events come from 127.0.0.1.
    elsewhere: await make('verify ip allowlist', { allowedIps: ['192.0.2.0/24'] }),
    // One call an hour, used up below: every call of the scenario with it is refused.
    limited: await make('verify rate limit', { rateLimit: '1/h' }),
    // Reported as leaked by a signed report (the report route's cases).
    leaked: await make('verify leaked'),
  };
  await repositories.keys.revoke(created.revoked.record.key_id);
  await repositories.keys.disable({
    keyId: created.disabled.record.key_id,
    branchId,
    now: new Date(),
    actor: 'verify',
  });
  // Its counter full in this hour and the next two: a run crossing the hour gets the same answers.
  const hour = 3600;
  const thisHour = Math.floor(Date.now() / 1000 / hour) * hour;
  for (const window of [thisHour, thisHour + hour, thisHour + 2 * hour]) {
    await repositories.rateLimits.increment(created.limited.record.key_id, window, hour);
  }
  // Expires within days: the daily Key Expiring run has one key to tell about.
  await make('verify expiring', { expiresAt: new Date(Date.now() + 3 * 24 * 3600_000) });
  return Object.fromEntries(Object.entries(created).map(([role, { key }]) => [role, key])) as ScenarioKeys;
};

/** The calls made on one route: a good one, then one per documented error it can answer. */
const routeCases = (
  route: TemplateRoute,
  keys: ScenarioKeys,
  context: { providerId: string; lists: Set<string>; cases: Case[]; signed: Signer },
) => {
  const [method = 'GET', template = '/'] = route.routeKey.split(' ');
  const path = template.replace(/\{(\w+)\}/g, context.providerId);
  const at = (label: string, expected: number, extra: Partial<Case> = {}) =>
    context.cases.push({ label: `${route.routeKey}: ${label}`, method, path, expected, ...extra });
  if (route.routeKey === REPORT_ROUTE_KEY) return reportCases(context.signed, keys.leaked, at);
  at('a read key', 200, { key: keys.read });
  at('no key', 401, { code: 'missing_api_key' });
  at('a malformed key', 401, { key: 'wsk_malformed', code: 'invalid_api_key' });
  at('an unknown key', 401, { key: generateApiKey(), code: 'invalid_api_key' });
  at('a revoked key', 401, { key: keys.revoked, code: 'revoked_api_key' });
  at('a disabled key', 401, { key: keys.disabled, code: 'disabled_api_key' });
  at('an expired key', 401, { key: keys.expired, code: 'expired_api_key' });
  at('a caller outside the key IP allowlist', 403, { key: keys.elsewhere, code: 'ip_not_allowed' });
  at('a key without read', 403, { key: keys.noScope, code: 'insufficient_scope' });
  at('a key over its rate limit', 429, { key: keys.limited, code: 'rate_limited' });
  if (template.includes('{'))
    at('an unknown id', 404, {
      key: keys.read,
      path: template.replace(/\{(\w+)\}/g, 'no_such_id'),
      code: 'not_found',
    });
  if (context.lists.has(route.routeKey)) {
    at('a bad limit', 400, { key: keys.read, query: { limit: '0' }, code: 'invalid_request' });
    at('a bad cursor', 400, { key: keys.read, query: { cursor: 'forged' }, code: 'invalid_request' });
  }
};

/**
 * Writes the demo branches straight to the tables (not through any function, so not attributed)
 * and the keys the scenario calls with, then lists the calls: every route with every documented
 * error, an unknown path and a known path with another method.
 */
export const buildScenario = async (
  raw: DynamoDBClient,
  tables: ApiTableNames,
  assembly: Assembly,
  signed: Signer,
): Promise<{ cases: Case[]; limitedKey: string }> => {
  const repositories = createRepositories(DynamoDBDocumentClient.from(raw), tables);
  const seed = await readSeedFile(DEMO_SEED_FILE);
  for (const branch of seed.branches) await repositories.branchData.putBranch(branch);
  const branch = seed.branches[0]!;
  const providerId = branch.payment_providers.find((provider) => provider.active)?.id ?? 'none';
  const keys = await createKeys(repositories, branch.id);
  const context = { providerId, lists: listOperations(), cases: [] as Case[], signed };
  for (const route of assembly.routes.filter((r) => r.routeKey !== '$default')) routeCases(route, keys, context);
  const { cases } = context;
  const firstPath = cases[0]?.path ?? '/';
  cases.push({
    label: 'an unknown path',
    method: 'GET',
    path: '/v1/verify-no-such-path',
    expected: 404,
    code: 'not_found',
    key: keys.read,
  });
  cases.push({
    label: 'a known path with another method',
    method: 'DELETE',
    path: firstPath,
    expected: 405,
    code: 'method_not_allowed',
    key: keys.read,
  });
  return { cases, limitedKey: keys.limited };
};

/**
 * The stream records DynamoDB would deliver for the captured writes to one table, kept to those
 * the mapping's filter lets through, then one record that is not an item of the table (what the
 * consumer counts as unreadable and must not fail its batch on).
 */
export const streamRecordsOf = (changes: readonly CapturedWrite[], table: TemplateTable, filters?: readonly Json[]) => {
  const viewType = table.properties.StreamSpecification?.StreamViewType as StreamViewType | undefined;
  const record = (change: Omit<StreamChange, 'sequenceNumber'>, i: number) =>
    streamRecord({ ...change, sequenceNumber: sequenceNumber(i + 1) }, table.arn, viewType);
  const written = changes.filter((write) => write.table === table.name) as unknown as Pick<
    StreamChange,
    'keys' | 'newImage' | 'oldImage'
  >[];
  const passed = written
    .map((write, i) =>
      record({ ...write, eventName: !write.oldImage ? 'INSERT' : write.newImage ? 'MODIFY' : 'REMOVE' }, i),
    )
    .filter((one) => !filters || filters.some((pattern) => matchesPattern(pattern, one)));
  const keys = passed.at(-1)?.dynamodb?.Keys as StreamChange['keys'] | undefined;
  if (!keys) return passed;
  return [
    ...passed,
    record({ eventName: 'INSERT', keys, newImage: { verify: { S: 'not an item of this table' } } }, written.length),
  ];
};
