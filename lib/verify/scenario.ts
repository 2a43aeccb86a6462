/**
 * The scenario the verifier plays on a running assembly: its data and keys, the calls it makes
 * and the answers the contract expects, and the stream records the writes would produce.
 *
 * Leaked keys and key events (docs/decisions.md "Leaked keys", "Key events"): the report route gets
 * signed reports instead of bearer-key cases, each function an EventBridge schedule invokes (the
 * daily "Key Expiring" run) a scheduled event. GitHub's keys can't sign here, so the run signs
 * with a key pair made as the local stack makes its own (lib/local/key-events-setup.ts), published
 * behind a `file:` URL: the one variable of the template replaced, SECRET_SCANNING_KEYS_URL.
 */
import { randomUUID, sign } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { DynamoDBClient, StreamViewType } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Params } from 'hono/router';
import { TrieRouter } from 'hono/router/trie-router';
import { routeKey, routes, secretScanningRoute } from '../../shared/api/routes';
import { generateApiKey } from '../../shared/domain/api-key';
import { MAX_REPORT_BYTES } from '../../shared/domain/secret-scanning';
import { createRepositories, type Repositories } from '../../shared/data/repositories';
import type { CreateKeyInput } from '../../shared/data/repositories/keys';
import { API_TABLES, TABLE_ENV, type ApiTableNames } from '../../shared/data/tables';
import { readSeedFile } from '../operator/seed';
import { LOCAL_SIGNING_KEY_ID, setUpLocalKeyEvents } from '../local/key-events-setup';
import { parseBody } from '../local/change-capture';
import { sequenceNumber, streamRecord } from '../local/stream-events';
import { DEMO_SEED_FILE } from '../project-paths';
import {
  LOCAL_ACCOUNT,
  LOCAL_REGION,
  matchesPattern,
  type Assembly,
  type Json,
  type TemplateFunction,
  type TemplateRoute,
  type TemplateTable,
} from './assembly';
import type { CapturedWrite } from './recording-proxy';

export interface Case {
  label: string;
  method: string;
  path: string;
  query?: Record<string, string>;
  key?: string;
  expected: number;
  /** The documented error code (shared/api/errors.ts) an error answer must carry. */
  code?: string;
  /** Request headers and body beyond the key (the secret scanning report). */
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

/** Routes that take `limit` and `cursor`: a list reads its page with a Query (shared/api/routes.ts). */
const LISTS = new Set(routes.filter((route) => route.data.actions.includes('dynamodb:Query')).map(routeKey));

/** `error.code` of an error body, if it has one. */
export const errorCodeOf = (body: string | undefined): string | undefined => {
  const code = (parseBody(body ?? '') as { error?: { code?: unknown } }).error?.code;
  return typeof code === 'string' ? code : undefined;
};

/** The keys the scenario calls with, one per way a key can be refused (and one that is accepted). */
const createKeys = async (repositories: Repositories, branchId: string) => {
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
  for (const window of [thisHour, thisHour + hour, thisHour + 2 * hour])
    await repositories.rateLimits.increment(created.limited.record.key_id, window, hour);
  // Expires within days: the daily Key Expiring run has one key to tell about.
  await make('verify expiring', { expiresAt: new Date(Date.now() + 3 * 24 * 3600_000) });
  type Role = keyof typeof created;
  return Object.fromEntries(Object.entries(created).map(([role, { key }]) => [role, key])) as Record<Role, string>;
};
type ScenarioKeys = Awaited<ReturnType<typeof createKeys>>;

/** Signs a report body as GitHub does: the headers that go with it. */
export type Signer = (body: string) => Record<string, string>;

/** Points every function that reads SECRET_SCANNING_KEYS_URL at the local stack's own key pair; returns its signer. */
export const useOwnSigningKey = (functions: readonly TemplateFunction[]): Signer => {
  const { secretScanningKeysUrl, signingKeyFile } = setUpLocalKeyEvents(undefined, {});
  const privateKey = readFileSync(signingKeyFile!);
  for (const fn of functions) {
    if (fn.environment.SECRET_SCANNING_KEYS_URL !== undefined)
      fn.environment.SECRET_SCANNING_KEYS_URL = secretScanningKeysUrl;
  }
  return (body) => ({
    'content-type': 'application/json',
    'github-public-key-identifier': LOCAL_SIGNING_KEY_ID,
    'github-public-key-signature': sign('sha256', Buffer.from(body), privateKey).toString('base64'),
  });
};

/**
 * The calls made on one route: a good one, then one per documented error it can answer; on the
 * report route a live key reported (twice), then each refusal.
 */
const routeCases = (
  route: TemplateRoute,
  keys: ScenarioKeys,
  context: { providerId: string; cases: Case[]; signed: Signer },
) => {
  const [method = 'GET', template = '/'] = route.routeKey.split(' ');
  const path = template.replace(/\{(\w+)\}/g, context.providerId);
  const at = (label: string, expected: number, extra: Partial<Case> = {}) =>
    context.cases.push({ label: `${route.routeKey}: ${label}`, method, path, expected, ...extra });
  if (route.routeKey === routeKey(secretScanningRoute)) {
    const report = JSON.stringify([
      { token: keys.leaked, type: 'branch_api_key', url: 'https://verify.local', source: 'content' },
    ]);
    const signed = (body: string, code?: string) => ({ body, headers: context.signed(body), ...(code && { code }) });
    at('a signed report of a live key', 200, signed(report));
    at('the same report again', 200, signed(report));
    at('an unsigned report', 401, {
      ...signed(report, 'invalid_signature'),
      headers: { 'content-type': 'application/json' },
    });
    at('a report over 1 MB', 413, signed(`[${' '.repeat(MAX_REPORT_BYTES)}]`, 'payload_too_large'));
    at('a signed report that is not an array', 400, signed('{"token":"x"}', 'invalid_request'));
    return;
  }
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
    at('an unknown id', 404, { key: keys.read, path: template.replace(/\{(\w+)\}/g, 'no_such_id'), code: 'not_found' });
  if (LISTS.has(route.routeKey)) {
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
  const cases: Case[] = [];
  for (const route of assembly.routes.filter((r) => r.routeKey !== '$default'))
    routeCases(route, keys, { providerId, cases, signed });
  const other = { method: 'GET', path: '/v1/verify-no-such-path', key: keys.read };
  const known = { ...other, method: 'DELETE', path: cases[0]?.path ?? '/' };
  cases.push(
    { ...other, label: 'an unknown path', expected: 404, code: 'not_found' },
    { ...known, label: 'a known path with another method', expected: 405, code: 'method_not_allowed' },
  );
  return { cases, limitedKey: keys.limited };
};

/** Logical ids of the functions an EventBridge schedule rule invokes. */
export const scheduledFunctions = (assembly: Assembly): string[] =>
  Object.values(assembly.resources)
    .filter((resource: Json) => resource.Type === 'AWS::Events::Rule' && resource.Properties?.ScheduleExpression)
    .flatMap((resource: Json) => (resource.Properties?.Targets ?? []) as Json[])
    .map((target) => (target.Arn as Json | undefined)?.['Fn::GetAtt']?.[0] as string | undefined)
    .filter((id): id is string => id !== undefined);

/** The event EventBridge Scheduler rules deliver. */
export const scheduledEvent = () => ({
  version: '0',
  id: randomUUID(),
  'detail-type': 'Scheduled Event',
  source: 'aws.events',
  account: LOCAL_ACCOUNT,
  time: new Date().toISOString(),
  region: LOCAL_REGION,
  resources: [],
  detail: {},
});

/**
 * The stream records DynamoDB would deliver for the captured writes to one table, kept to those
 * the mapping's filter lets through, then one record that is not an item of the table (what the
 * consumer counts as unreadable and must not fail its batch on).
 */
export const streamRecordsOf = (changes: readonly CapturedWrite[], table: TemplateTable, filters?: readonly Json[]) => {
  const viewType = table.properties.StreamSpecification?.StreamViewType as StreamViewType | undefined;
  const record = (change: Omit<CapturedWrite, 'at' | 'table'>, i: number) =>
    streamRecord({ ...change, sequenceNumber: sequenceNumber(i + 1) }, table.arn, viewType);
  const written = changes.filter((write) => write.table === table.name);
  const passed = written
    .map(record)
    .filter((one) => !filters || filters.some((pattern) => matchesPattern(pattern, one)));
  const keys = passed.at(-1)?.dynamodb?.Keys as CapturedWrite['keys'] | undefined;
  if (!keys) return passed;
  return [
    ...passed,
    record({ eventName: 'INSERT', keys, newImage: { verify: { S: 'not an item of this table' } } }, written.length),
  ];
};
