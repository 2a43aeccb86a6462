/**
 * The mixed load of `npm run load` and test/reliability/load.test.ts: a fixed cycle of request
 * kinds (valid calls, 4xx, refused, malformed and unknown keys, no key, unknown route, wrong method)
 * through the in-process local gateway; every status and code checked against its kind, and exactly
 * one usage record per request made with a known key on a known route (matched by X-Request-Id).
 * The environment (DYNAMODB_ENDPOINT, *_TABLE) must be set first: the handlers read it at import.
 */
import type autocannon from 'autocannon';
import { generateApiKey } from '../../shared/domain/api-key';
import { startGateway } from '../../lib/local/gateway';
import { markdownTable } from '../../lib/markdown';
import { drive, headerValue } from '../lib/load';
import { reliabilityBranches } from './branches';
import { openStore, scanAll, UsageLedger, type SeenRecord, type UsageAudit } from './ledger';
import { SecretTracker } from './secrets';
import type { Scope, SeedBranch } from '../../shared/domain/schemas';

export interface LoadOptions {
  /** Total requests. @default 10000 */
  requests?: number;
  /** Concurrent connections. @default 32 */
  connections?: number;
  /** The run is stopped (and fails) if it takes longer. @default 300 */
  maxSeconds?: number;
  /** Receives every key value and Authorization value used, for a hygiene check. */
  secrets?: SecretTracker;
  /**
   * The usage records the service logged whole at error level because it could not store them
   * (read after the run): they count as kept, not lost, and are reported apart.
   */
  loggedRecords?: () => SeenRecord[];
  /** Requests the service logged as made without a known key (a 503 before the key was read). */
  unattributed?: () => Set<string>;
  /** The log text of the run, searched for secrets with the tables. */
  logText?: () => string;
}

interface RequestKind {
  name: string;
  method: 'GET' | 'POST';
  path: string;
  authorization?: string;
  /** The key whose record the call must leave; absent when no record may exist. */
  keyLabel?: string;
  status: number;
  /** Error code, or the `object` of a 200 body. */
  expect: string;
}

export interface KindFigures {
  name: string;
  status: number;
  expect: string;
  record: boolean;
  requests: number;
  unexpected: number;
}

export interface LoadReport {
  requested: number;
  connections: number;
  /** Responses received and checked. */
  responses: number;
  durationMs: number;
  requestsPerSecond: number;
  latencyMs: { p50: number; p90: number; p99: number; max: number; mean: number };
  statuses: Record<string, number>;
  /** Responses whose status or code was not their kind's. */
  unexpectedStatuses: number;
  /** A few of them, to read. */
  unexpectedSamples: string[];
  errors: number;
  timeouts: number;
  stoppedEarly: boolean;
  kinds: KindFigures[];
  records: UsageAudit;
  perKey: { key: string; keyId: string; expected: number; found: number }[];
  /** Plaintext keys or Authorization values found in the tables (and the log text, if given) after the run. */
  secretsInTables: number;
}

const flipChar = (value: string, at: number) =>
  value.slice(0, at) + (value[at] === 'A' ? 'B' : 'A') + value.slice(at + 1);

/** Seeds the data, creates the keys and builds the cycle of request kinds. */
const prepare = async (secrets?: SecretTracker) => {
  const { client, tables, branchData, keys } = await openStore();
  const [first, second] = reliabilityBranches(2) as [SeedBranch, SeedBranch];
  await branchData.putBranch(first);
  await branchData.putBranch(second);
  const make = async (label: string, input: { branchId: string; expiresAt?: Date; scopes?: Scope[] }) => {
    // Far above the load: this run measures throughput and records; runaway.ts measures the limit.
    const { key, record } = await keys.create({
      scopes: ['read'],
      rateLimit: '1000000/s',
      ...input,
      name: `load: ${label}`,
    });
    secrets?.key(key);
    return { label, key, keyId: record.key_id };
  };
  const valid = await make('valid (branch 1)', { branchId: first.id });
  const valid2 = await make('valid (branch 2)', { branchId: second.id });
  const expired = await make('expired', { branchId: first.id, expiresAt: new Date(Date.now() - 60_000) });
  const revoked = await make('revoked', { branchId: first.id });
  await keys.revoke(revoked.keyId);
  const noScope = await make('wrong scope', { branchId: first.id, scopes: ['write'] });
  const unknown = generateApiKey();
  secrets?.key(unknown);

  const bearer = (key: string) => `Bearer ${key}`;
  const withKey = (
    name: string,
    owner: { label: string; key: string },
    path: string,
    status: number,
    expect: string,
  ): RequestKind => ({
    name,
    method: 'GET',
    path,
    authorization: bearer(owner.key),
    keyLabel: owner.label,
    status,
    expect,
  });
  const refused = (name: string, authorization: string | undefined, expect: string): RequestKind => ({
    name,
    method: 'GET',
    path: '/v1/branch',
    ...(authorization === undefined ? {} : { authorization }),
    status: 401,
    expect,
  });
  const kinds: RequestKind[] = [
    withKey('valid: branch', valid, '/v1/branch', 200, 'branch'),
    withKey('valid: members', valid, '/v1/members?limit=5', 200, 'list'),
    withKey('valid: payment providers', valid, '/v1/payment-providers', 200, 'list'),
    withKey('valid: one provider', valid, '/v1/payment-providers/pp_stripe', 200, 'payment_provider'),
    withKey('valid: branch 2', valid2, '/v1/branch', 200, 'branch'),
    withKey('valid: branch 2 members', valid2, '/v1/members', 200, 'list'),
    withKey('valid: branch', valid, '/v1/branch', 200, 'branch'),
    withKey('valid: members', valid, '/v1/members?limit=5', 200, 'list'),
    withKey('valid: unknown provider', valid, '/v1/payment-providers/pp_nope', 404, 'not_found'),
    withKey("valid: other branch's provider", valid, '/v1/payment-providers/pp_b2_adyen', 404, 'not_found'),
    withKey('valid: limit out of range', valid, '/v1/members?limit=0', 400, 'invalid_request'),
    withKey('expired key', expired, '/v1/branch', 401, 'expired_api_key'),
    withKey('revoked key', revoked, '/v1/members', 401, 'revoked_api_key'),
    withKey('wrong scope', noScope, '/v1/payment-providers', 403, 'insufficient_scope'),
    refused('malformed: bad checksum', bearer(flipChar(valid.key, 20)), 'invalid_api_key'),
    refused('malformed: wrong prefix', bearer(`sk_${valid.key.slice(4)}`), 'invalid_api_key'),
    refused('malformed: truncated', bearer(valid.key.slice(0, 40)), 'invalid_api_key'),
    refused('unknown key', bearer(unknown), 'invalid_api_key'),
    refused('no Authorization header', undefined, 'missing_api_key'),
    refused('other scheme', `Basic ${Buffer.from(`user:${valid.key}`).toString('base64')}`, 'missing_api_key'),
    { ...withKey('unknown route', valid, '/v1/nothing-here', 404, 'not_found'), keyLabel: undefined },
    {
      ...withKey('wrong method', valid, '/v1/members', 405, 'method_not_allowed'),
      method: 'POST',
      keyLabel: undefined,
    },
  ];
  kinds.forEach((kind) => secrets?.authorization(kind.authorization));
  const keyIds = new Map([valid, valid2, expired, revoked, noScope].map((k) => [k.label, k.keyId]));
  return { client, tables, kinds, keyIds };
};

/** What a response body says: the error code, or the object type of a success. */
const bodySays = (body: string): string | undefined => {
  try {
    const json = JSON.parse(body) as { error?: { code?: string }; object?: string };
    return json.error?.code ?? json.object;
  } catch {
    return undefined;
  }
};

export const runLoad = async (options: LoadOptions = {}): Promise<LoadReport> => {
  const requested = options.requests ?? 10_000;
  const connections = options.connections ?? 32;
  const maxSeconds = options.maxSeconds ?? 300;
  const secrets = options.secrets ?? new SecretTracker();
  const { client, tables, kinds, keyIds } = await prepare(secrets);
  const gateway = await startGateway({ port: 0 });
  const ledger = new UsageLedger();
  const stage = new URL(gateway.baseUrl).pathname;
  const figures: KindFigures[] = kinds.map((kind) => ({
    name: kind.name,
    status: kind.status,
    expect: kind.expect,
    record: kind.keyLabel !== undefined,
    requests: 0,
    unexpected: 0,
  }));
  const statuses: Record<string, number> = {};
  const samples: string[] = [];
  let responses = 0;
  let unexpectedStatuses = 0;
  let missingRequestIds = 0;

  const requests = kinds.map((kind, index): autocannon.Request => ({
    method: kind.method,
    path: `${stage}${kind.path}`,
    headers: kind.authorization === undefined ? {} : { authorization: kind.authorization },
    onResponse: (status, body, _context, headers = {}) => {
      responses += 1;
      statuses[status] = (statuses[status] ?? 0) + 1;
      const figure = figures[index]!;
      figure.requests += 1;
      const says = bodySays(body);
      if (status !== kind.status || says !== kind.expect) {
        unexpectedStatuses += 1;
        figure.unexpected += 1;
        if (samples.length < 5) samples.push(`${kind.name}: ${status} ${says ?? body.slice(0, 80)}`);
      }
      const requestId = headerValue(headers, 'x-request-id');
      if (!requestId) {
        missingRequestIds += 1;
        return;
      }
      // A 503 may have come before the key was read: then no record can exist (the log says so).
      const expectation = kind.keyLabel
        ? { keyId: keyIds.get(kind.keyLabel)!, status, mayBeUnattributed: status === 503 }
        : null;
      ledger.expect(requestId, expectation);
    },
  }));

  const started = performance.now();
  try {
    // A generous per-request timeout: a busy machine may be slow, and the run is judged by counts.
    const run = { connections, amount: requested, timeout: 60, maxSeconds, requests };
    const result = await drive(`http://127.0.0.1:${gateway.port}`, run);
    const durationMs = performance.now() - started;
    const table = (await scanAll(client, tables.usage)) as SeenRecord[];
    const records = ledger.audit(table, options.loggedRecords?.() ?? [], options.unattributed?.());
    // Hygiene of what the run stored: the keys, usage and branch-data tables, raw, searched for every secret.
    const dumps = await Promise.all(
      [tables.keys, tables.usage, tables.branchData].map((name) => scanAll(client, name)),
    );
    const secretsInTables = secrets.findIn(`${JSON.stringify(dumps)}\n${options.logText?.() ?? ''}`).length;
    const perKey = [...keyIds].map(([key, keyId]) => ({
      key,
      keyId,
      expected: figures
        .filter((figure, i) => kinds[i]!.keyLabel === key)
        .reduce((sum, figure) => sum + figure.requests, 0),
      found: table.filter((record) => record.key_id === keyId).length,
    }));
    return {
      requested,
      connections,
      responses,
      durationMs,
      requestsPerSecond: responses / (durationMs / 1000),
      latencyMs: {
        p50: result.latency.p50,
        p90: result.latency.p90,
        p99: result.latency.p99,
        max: result.latency.max,
        mean: result.latency.average,
      },
      statuses,
      unexpectedStatuses: unexpectedStatuses + missingRequestIds,
      unexpectedSamples: samples,
      errors: result.errors,
      timeouts: result.timeouts,
      stoppedEarly: result.stopped,
      kinds: figures,
      records,
      secretsInTables,
      perKey,
    };
  } finally {
    await gateway.close();
    client.destroy();
  }
};

/** Every way the run broke an invariant; empty when it held. */
export const loadProblems = (report: LoadReport): string[] => {
  const problems: string[] = [];
  if (report.stoppedEarly) problems.push('the run hit its time limit');
  if (report.responses !== report.requested)
    problems.push(`${report.responses} responses for ${report.requested} requests`);
  if (report.unexpectedStatuses > 0)
    problems.push(`${report.unexpectedStatuses} unexpected statuses: ${report.unexpectedSamples.join('; ')}`);
  if (report.errors + report.timeouts > 0)
    problems.push(`${report.errors} connection errors, ${report.timeouts} timeouts`);
  const { records } = report;
  if (records.lost.length) problems.push(`${records.lost.length} usage records lost`);
  if (records.unexpected.length) problems.push(`${records.unexpected.length} usage records that should not exist`);
  if (records.duplicates.length) problems.push(`${records.duplicates.length} requests with more than one record`);
  if (records.mismatched.length) problems.push(`${records.mismatched.length} records with the wrong key or status`);
  if (records.inTable !== records.expected) {
    problems.push(
      `${records.inTable} records in the table for ${records.expected} expected` +
        (records.logged ? ` (${records.logged} only in the error log, to be replayed)` : ''),
    );
  }
  if (report.secretsInTables > 0)
    problems.push(`${report.secretsInTables} plaintext secrets found in the tables or logs`);
  for (const key of report.perKey) {
    if (key.found !== key.expected) problems.push(`key ${key.key}: ${key.found} records for ${key.expected} requests`);
  }
  return problems;
};

const ms = (value: number) => `${Math.round(value * 10) / 10} ms`;

/** The figures as a Markdown table (what docs/reliability.md shows), then the per-kind table. */
export const formatReport = (report: LoadReport): string => {
  const { records } = report;
  const statusList = Object.entries(report.statuses)
    .map(([status, count]) => `${status}: ${count}`)
    .join(', ');
  const rows: [string, string][] = [
    ['requests (answered / asked)', `${report.responses} / ${report.requested}`],
    ['connections', String(report.connections)],
    ['duration', `${(report.durationMs / 1000).toFixed(1)} s (${Math.round(report.requestsPerSecond)} req/s)`],
    [
      'latency p50 / p90 / p99 / max',
      [report.latencyMs.p50, report.latencyMs.p90, report.latencyMs.p99, report.latencyMs.max].map(ms).join(' / '),
    ],
    ['statuses', statusList],
    ['unexpected statuses', String(report.unexpectedStatuses)],
    ['connection errors / timeouts', `${report.errors} / ${report.timeouts}`],
    ['usage records expected / in the table', `${records.expected} / ${records.inTable}`],
    ['usage records only in the error log (kept, to be replayed)', String(records.logged)],
    ['known-key calls answered 503 before the key was read (no record possible)', String(records.unattributed)],
    [
      'records lost / unexpected / duplicated / mismatched',
      [records.lost, records.unexpected, records.duplicates, records.mismatched].map((list) => list.length).join(' / '),
    ],
    ['plaintext keys / Authorization values in tables and logs', String(report.secretsInTables)],
    ...report.perKey.map((key): [string, string] => [
      `records of key "${key.key}" (expected / found)`,
      `${key.expected} / ${key.found}`,
    ]),
  ];
  const kindRows = report.kinds.reduce<Map<string, KindFigures>>((merged, kind) => {
    const seen = merged.get(kind.name);
    merged.set(
      kind.name,
      seen
        ? { ...seen, requests: seen.requests + kind.requests, unexpected: seen.unexpected + kind.unexpected }
        : { ...kind },
    );
    return merged;
  }, new Map());
  return [
    ...markdownTable([['figure', 'value'], ...rows]),
    '',
    ...markdownTable([
      ['request kind', 'expected answer', 'usage record', 'requests', 'unexpected'],
      ...[...kindRows.values()].map((kind) => [
        kind.name,
        `${kind.status} ${kind.expect}`,
        kind.record ? 'yes' : 'no',
        String(kind.requests),
        String(kind.unexpected),
      ]),
    ]),
  ].join('\n');
};
