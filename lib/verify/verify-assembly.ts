/**
 * Runs a synthesized assembly as it will be deployed, on the embedded DynamoDB: every function
 * from its asset code, handler string and resolved environment; routes from the template; stream
 * consumers fed from the tables their event source mappings name. A scenario touches every route,
 * every error the API documents and every failure path that emits a metric. Then each DynamoDB
 * call is checked against the function's role, each granted action against the calls, and each
 * alarm against the metrics the run emitted (docs/deploy.md "Verify the assembly").
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { generateApiKey } from '../../shared/domain/api-key';
import { createRepositories } from '../../shared/data/repositories';
import { API_TABLES, TABLE_ENV } from '../../shared/data/tables';
import { buildEvent } from '../local/events';
import { startEmbeddedDynamo } from '../local/dynamo';
import { readSeedFile } from '../operator/operations';
import { readAssembly, LOCAL_REGION, type TemplateTable } from './assembly';
import { checkAlarms, checkIam, type Defect } from './checks';
import { startFunction, type FunctionHost } from './function-host';
import { errorCodeOf, listOperations, routeMatcher, tableNamesOf } from './scenario-helpers';
import {
  checkKeyEventGrants,
  REPORT_ROUTE_KEY,
  reportCases,
  scheduledEvent,
  scheduledFunctions,
  useOwnSigningKey,
} from './leak-scenario';

const PROJECT_ROOT = join(import.meta.dirname, '..', '..');
const SEED_FILE = join(PROJECT_ROOT, 'seed', 'demo.json');

export interface VerifyReport {
  stack: string;
  defects: Defect[];
  functions: number;
  invocations: number;
  /** DynamoDB operations observed, per function: `dynamodb:Query on <table> [index]` → count. */
  operations: Record<string, Record<string, number>>;
  unusedGrants: string[];
  alarms: number;
  elapsedMs: number;
}

interface Case {
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

export const verifyAssembly = async (dir: string, stackName?: string): Promise<VerifyReport> => {
  const started = performance.now();
  const assembly = readAssembly(dir, stackName);
  const defects: Defect[] = [];
  const dynamo = await startEmbeddedDynamo();
  const raw = new DynamoDBClient({
    endpoint: dynamo.endpoint,
    region: LOCAL_REGION,
    credentials: { accessKeyId: 'verify', secretAccessKey: 'verify' },
  });
  const hosts = new Map<string, FunctionHost>();
  try {
    for (const table of assembly.tables) {
      const { KeySchema, AttributeDefinitions, GlobalSecondaryIndexes } = table.properties;
      await raw.send(
        new CreateTableCommand({
          TableName: table.name,
          KeySchema,
          AttributeDefinitions,
          BillingMode: 'PAY_PER_REQUEST',
          ...(GlobalSecondaryIndexes ? { GlobalSecondaryIndexes } : {}),
        }),
      );
    }

    const keyNamesOf = (table: TemplateTable) =>
      (table.properties.KeySchema as { AttributeName: string }[]).map((key) => key.AttributeName);
    const streamed = new Map(
      assembly.tables.filter((table) => table.streamArn).map((table) => [table.name, keyNamesOf(table)]),
    );
    const signed = useOwnSigningKey(assembly.functions);
    for (const fn of assembly.functions) {
      for (const [name, value] of Object.entries(fn.environment)) {
        if (value === undefined)
          defects.push({
            resource: fn.logicalId,
            reason: `environment variable ${name} refers to something that cannot be resolved`,
          });
      }
      const host = await startFunction(fn, dynamo.endpoint, streamed);
      hosts.set(fn.logicalId, host);
      if (host.importError) defects.push({ resource: fn.logicalId, reason: `fails to load: ${host.importError}` });
    }

    // Data and keys, written straight to the tables (not through any function, so not attributed).
    const tables = tableNamesOf(assembly);
    if (!tables) {
      defects.push({
        resource: assembly.stack,
        reason: `no function is given every API table variable (${API_TABLES.map((name) => TABLE_ENV[name]).join(', ')})`,
      });
    } else {
      const repositories = createRepositories(DynamoDBDocumentClient.from(raw), tables);
      const seed = await readSeedFile(SEED_FILE);
      for (const branch of seed.branches) await repositories.branchData.putBranch(branch);
      const branch = seed.branches[0]!;
      const providerId = branch.payment_providers.find((provider) => provider.active)?.id ?? 'none';
      const past = new Date(Date.now() - 60_000);
      const make = async (scopes: ['read'] | ['team:read'], expiresAt?: Date) =>
        (
          await repositories.keys.create({
            branchId: branch.id,
            scopes,
            name: 'verify',
            ...(expiresAt ? { expiresAt } : {}),
          })
        ).key;
      const readKey = await make(['read']);
      const noScopeKey = await make(['team:read']);
      // Stored with an expiry in the past: the repository takes any time (the operator tooling checks).
      const expiredKey = await make(['read'], past);
      const revoked = await repositories.keys.create({ branchId: branch.id, scopes: ['read'], name: 'verify revoked' });
      await repositories.keys.revoke(revoked.record.key_id);
      // Allowed only from a documentation range (RFC 5737); events come from 127.0.0.1.
      const elsewhere = await repositories.keys.create({
        branchId: branch.id,
        scopes: ['read'],
        name: 'verify ip allowlist',
        allowedIps: ['192.0.2.0/24'],
      });

      // One call an hour: the first call of the scenario with it is admitted, every later one refused.
      const limited = await repositories.keys.create({
        branchId: branch.id,
        scopes: ['read'],
        name: 'verify rate limit',
        rateLimit: '1/h',
      });

      // Reported as leaked by a signed report; and one expiring within days, for the daily run.
      const leaked = await repositories.keys.create({ branchId: branch.id, scopes: ['read'], name: 'verify leaked' });
      const inDays = new Date(Date.now() + 3 * 24 * 3600_000);
      await repositories.keys.create({
        branchId: branch.id,
        scopes: ['read'],
        name: 'verify expiring',
        expiresAt: inDays,
      });

      const lists = listOperations();
      const cases: Case[] = [];
      for (const route of assembly.routes.filter((r) => r.routeKey !== '$default')) {
        if (route.routeKey === REPORT_ROUTE_KEY) {
          cases.push(...reportCases(signed, leaked.key));
          continue;
        }
        const [method = 'GET', template = '/'] = route.routeKey.split(' ');
        const path = template.replace(/\{(\w+)\}/g, providerId);
        const at = (label: string, expected: number, extra: Partial<Case> = {}) =>
          cases.push({ label: `${route.routeKey}: ${label}`, method, path, expected, ...extra });
        at('a read key', 200, { key: readKey });
        at('no key', 401, { code: 'missing_api_key' });
        at('a malformed key', 401, { key: 'wsk_malformed', code: 'invalid_api_key' });
        at('an unknown key', 401, { key: generateApiKey(), code: 'invalid_api_key' });
        at('a revoked key', 401, { key: revoked.key, code: 'revoked_api_key' });
        at('an expired key', 401, { key: expiredKey, code: 'expired_api_key' });
        at('a caller outside the key IP allowlist', 403, { key: elsewhere.key, code: 'ip_not_allowed' });
        at('a key without read', 403, { key: noScopeKey, code: 'insufficient_scope' });
        if (cases.every((one) => one.key !== limited.key)) at('a key within its rate limit', 200, { key: limited.key });
        at('a key over its rate limit', 429, { key: limited.key, code: 'rate_limited' });
        if (template.includes('{'))
          at('an unknown id', 404, {
            key: readKey,
            path: template.replace(/\{(\w+)\}/g, 'no_such_id'),
            code: 'not_found',
          });
        if (lists.has(route.routeKey)) {
          at('a bad limit', 400, { key: readKey, query: { limit: '0' }, code: 'invalid_request' });
          at('a bad cursor', 400, { key: readKey, query: { cursor: 'forged' }, code: 'invalid_request' });
        }
      }
      const firstPath = cases[0]?.path ?? '/';
      cases.push({
        label: 'an unknown path',
        method: 'GET',
        path: '/v1/verify-no-such-path',
        expected: 404,
        code: 'not_found',
        key: readKey,
      });
      cases.push({
        label: 'a known path with another method',
        method: 'DELETE',
        path: firstPath,
        expected: 405,
        code: 'method_not_allowed',
        key: readKey,
      });

      const match = routeMatcher(assembly.routes);
      const call = async (one: Case, note = '') => {
        const selected = match(one.method, one.path);
        if (!selected)
          return defects.push({ resource: assembly.stack, reason: `no route serves ${one.method} ${one.path}` });
        const host = hosts.get(selected.route.functionLogicalId);
        if (!host || host.importError) return;
        const event = buildEvent({
          method: one.method,
          path: one.path,
          stage: assembly.stageName,
          routeKey: selected.route.routeKey,
          requestId: randomUUID(),
          headers: { host: 'verify.local', ...(one.key ? { authorization: `Bearer ${one.key}` } : {}), ...one.headers },
          ...(one.body !== undefined ? { body: one.body } : {}),
          ...(one.query ? { query: one.query } : {}),
          ...(selected.pathParameters ? { pathParameters: selected.pathParameters } : {}),
        });
        const outcome = await host.invoke({ ...event, requestContext: { ...event.requestContext } });
        const result = outcome.result as { statusCode?: number; body?: string } | undefined;
        const status = result?.statusCode;
        if (outcome.error)
          defects.push({
            resource: host.fn.logicalId,
            reason: `${one.label}${note}: the function failed: ${outcome.error}`,
          });
        else if (status !== one.expected) {
          defects.push({
            resource: host.fn.logicalId,
            reason: `${one.label}${note}: answered ${status}, expected ${one.expected}`,
          });
        } else if (one.code !== undefined && errorCodeOf(result?.body) !== one.code) {
          defects.push({
            resource: host.fn.logicalId,
            reason: `${one.label}${note}: answered ${status} with code ${errorCodeOf(result?.body) ?? 'none'}, expected ${one.code}`,
          });
        }
      };
      for (const one of cases) await call(one);
      // Failure paths: every write fails once per route; the answer must not change, and what the
      // code emits when a write fails (metrics the alarms watch) is emitted.
      // Each function's calls in turn (one invocation at a time per process, as per container), the
      // functions side by side: the SDK's retries and backoff make these the slow ones.
      for (const host of hosts.values()) host.proxy.failWrites = true;
      const byFunction = new Map<string, Case[]>();
      // The rate-limited key has used its one call: replayed, it would rightly be a 429.
      for (const one of cases.filter((c) => c.expected === 200 && c.key !== limited.key)) {
        const id = match(one.method, one.path)?.route.functionLogicalId ?? '';
        byFunction.set(id, [...(byFunction.get(id) ?? []), one]);
      }
      await Promise.all(
        [...byFunction.values()].map(async (group) => {
          for (const one of group) await call(one, ' (writes failing)');
        }),
      );
      for (const host of hosts.values()) host.proxy.failWrites = false;
    }

    // Scheduled functions (the daily Key Expiring run): one scheduled event each.
    for (const id of scheduledFunctions(assembly)) {
      const outcome = await hosts.get(id)?.invoke(scheduledEvent());
      if (outcome?.error) defects.push({ resource: id, reason: `a scheduled run failed: ${outcome.error}` });
    }

    // Background paths: each stream consumer gets what was written to its table, as stream records.
    await Promise.all([...hosts.values()].map((host) => host.proxy.settled()));
    const changes = [...hosts.values()].flatMap((host) => host.proxy.writes).sort((a, b) => (a.at < b.at ? -1 : 1));
    const streams = new Map<string, string[]>();
    const destinations = new Map<string, string[]>();
    for (const mapping of assembly.mappings) {
      if (mapping.onFailure) {
        destinations.set(mapping.functionLogicalId, [
          ...(destinations.get(mapping.functionLogicalId) ?? []),
          mapping.onFailure,
        ]);
      }
      const table = assembly.tables.find((candidate) => candidate.logicalId === mapping.tableLogicalId)!;
      const consumer = hosts.get(mapping.functionLogicalId);
      streams.set(mapping.functionLogicalId, [
        ...(streams.get(mapping.functionLogicalId) ?? []),
        table.streamArn ?? `${table.arn}/stream/*`,
      ]);
      if (!consumer || consumer.importError) continue;
      const viewType = String(table.properties.StreamSpecification?.StreamViewType ?? 'NEW_IMAGE');
      const records = changes
        .filter((write) => write.table === table.name)
        .map((write, i) => ({
          eventID: String(i + 1),
          eventName: !write.oldImage ? 'INSERT' : write.newImage ? 'MODIFY' : 'REMOVE',
          eventVersion: '1.1',
          eventSource: 'aws:dynamodb',
          awsRegion: LOCAL_REGION,
          eventSourceARN: table.streamArn,
          dynamodb: {
            ApproximateCreationDateTime: Math.floor(Date.now() / 1000),
            Keys: write.keys,
            ...(write.newImage && viewType.startsWith('NEW') ? { NewImage: write.newImage } : {}),
            ...(write.oldImage && (viewType === 'OLD_IMAGE' || viewType === 'NEW_AND_OLD_IMAGES')
              ? { OldImage: write.oldImage }
              : {}),
            SequenceNumber: String(BigInt('100000000000000000000') + BigInt(i)),
            SizeBytes: JSON.stringify(write.newImage ?? write.keys).length,
            StreamViewType: viewType,
          },
        }));
      if (records.length === 0) {
        defects.push({
          resource: mapping.logicalId,
          reason: `the scenario wrote nothing to table ${table.logicalId}, so its stream consumer never ran`,
        });
      }
      // Its failure path first: the first batch while its writes are throttled (whatever it answers,
      // Lambda retries), then every batch, that one again, as an at-least-once stream delivers it.
      if (records.length > 0) {
        consumer.proxy.failWrites = true;
        await consumer.invoke({ Records: records.slice(0, mapping.batchSize) });
        consumer.proxy.failWrites = false;
      }
      for (let i = 0; i < records.length; i += mapping.batchSize) {
        const outcome = await consumer.invoke({ Records: records.slice(i, i + mapping.batchSize) });
        const failures = (outcome.result as { batchItemFailures?: unknown[] } | undefined)?.batchItemFailures ?? [];
        if (outcome.error || failures.length > 0) {
          defects.push({
            resource: mapping.functionLogicalId,
            reason: `a stream batch failed: ${outcome.error ?? `${failures.length} item failure(s)`}`,
          });
        }
      }
    }

    const iam = checkIam(
      assembly,
      [...hosts.values()].map((host) => ({
        functionLogicalId: host.fn.logicalId,
        ...(host.fn.roleLogicalId ? { roleLogicalId: host.fn.roleLogicalId } : {}),
        operations: host.proxy.operations,
        streams: streams.get(host.fn.logicalId) ?? [],
        destinations: destinations.get(host.fn.logicalId) ?? [],
      })),
    );
    defects.push(...iam.defects, ...checkKeyEventGrants(assembly));
    defects.push(
      ...checkAlarms(
        assembly,
        assembly.alarms,
        [...hosts.values()].flatMap((host) => host.metrics),
      ),
    );

    const operations: VerifyReport['operations'] = {};
    for (const host of hosts.values()) {
      const counts: Record<string, number> = {};
      for (const op of host.proxy.operations) {
        const name = `${op.action} ${assembly.tables.find((t) => t.name === op.table)?.logicalId ?? op.table}${op.index ? `/${op.index}` : ''}`;
        counts[name] = (counts[name] ?? 0) + 1;
      }
      operations[host.fn.logicalId] = counts;
    }
    return {
      stack: assembly.stack,
      defects,
      functions: hosts.size,
      invocations: [...hosts.values()].reduce((sum, host) => sum + host.invocations, 0),
      operations,
      unusedGrants: iam.unused,
      alarms: assembly.alarms.length,
      elapsedMs: performance.now() - started,
    };
  } finally {
    await Promise.all([...hosts.values()].map((host) => host.close()));
    raw.destroy();
    await dynamo.close();
  }
};
