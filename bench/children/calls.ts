/**
 * DynamoDB calls per request, by outcome: the real handlers on an embedded DynamoDB, each SDK
 * command counted by a step added to the handlers' own client's middleware stack (as
 * test/support/harness.ts countCommands does; SDK retries happen below it, so a command counts
 * once). Prints one JSON line. Started by bench/run.ts with no DYNAMODB_ENDPOINT: it starts its own.
 */
import { startEmbeddedDynamo } from '../../lib/local/dynamo';
import { ensureTables } from '../../lib/operator/tables';
import { buildContext, buildEvent } from '../../lib/local/events';
import { generateApiKey } from '../../shared/domain/api-key';
import type { ApiEvent, ApiResponse } from '../../shared/api/http/response';
import type { ApiContext } from '../../shared/api/middlewares';
import { demoBranch, ENDPOINTS } from '../lib/fixtures';
import { KeysRepository } from '../../shared/data/repositories/keys';

const dynamo = await startEmbeddedDynamo({ port: 0 });
Object.assign(process.env, {
  DYNAMODB_ENDPOINT: dynamo.endpoint,
  AWS_REGION: 'local',
  KEYS_TABLE: 'calls-keys',
  USAGE_TABLE: 'calls-usage',
  BRANCH_DATA_TABLE: 'calls-branch-data',
  RATE_LIMITS_TABLE: 'calls-rate-limits',
  POWERTOOLS_LOG_LEVEL: 'SILENT',
});

// Loaded after the environment is set: the runtime reads it once, at module load.
type Fn = (event: ApiEvent, context: ApiContext) => Promise<ApiResponse>;
const runtime = await import('../../shared/lambda/runtime');
const handlers: Record<string, Fn> = {
  GetBranch: (await import('../../functions/get-branch')).handler,
  ListMembers: (await import('../../functions/list-members')).handler,
  ListPaymentProviders: (await import('../../functions/list-payment-providers')).handler,
  GetPaymentProvider: (await import('../../functions/get-payment-provider')).handler,
};

await ensureTables(runtime.documentClient, runtime.config.tables);
const keys = new KeysRepository(runtime.documentClient, runtime.config.tables.keys);
await runtime.branchData.putBranch(demoBranch);
const create = (input: {
  scopes?: ['read'] | ['team:read'];
  expiresAt?: Date;
  allowedIps?: string[];
  rateLimit?: string;
}) => keys.create({ branchId: demoBranch.id, scopes: input.scopes ?? ['read'], ...input });
const valid = await create({});
const revoked = await create({});
await keys.revoke(revoked.record.key_id);
const expired = await create({ expiresAt: new Date(Date.now() - 60_000) });
const noRead = await create({ scopes: ['team:read'] });
// The bench's events come from 127.0.0.1 (lib/local/events.ts).
const fenced = await create({ allowedIps: ['127.0.0.1/32'], expiresAt: new Date(Date.now() + 86_400_000) });
const elsewhere = await create({ allowedIps: ['192.0.2.0/24'] });
const limited = await create({ rateLimit: '1/h' });
const malformed = `${valid.key.slice(0, -1)}${valid.key.endsWith('A') ? 'B' : 'A'}`;

let commands: string[] = [];
runtime.documentClient.middlewareStack.add(
  (next, context) => (args) => {
    commands.push(context.commandName ?? 'unknown');
    return next(args);
  },
  { step: 'initialize', name: 'benchCountCommands' },
);

const invoke = async (endpoint: string, authorization: string | undefined, query?: Record<string, string>) => {
  const route = ENDPOINTS.find((one) => one.name === endpoint)!;
  commands = [];
  const response = await handlers[endpoint]!(
    buildEvent({
      path: route.path,
      routeKey: route.routeKey,
      headers: { host: 'bench', ...(authorization ? { authorization } : {}) },
      ...(route.pathParameters ? { pathParameters: route.pathParameters } : {}),
      ...(query ? { query } : {}),
    }),
    buildContext() as ApiContext,
  );
  return { status: response.statusCode, calls: commands.length, commands: [...commands] };
};

const bearer = (key: string) => `Bearer ${key}`;
/**
 * expected: the order of checks of docs/decisions.md (header → format → lookup → revoked → expired
 * → rate limit → IP allowlist → scope → handler), usage record for known keys. The rate-limit counter's UpdateItem
 * runs alongside the read, so a success is 4 calls in 3 sequential round trips.
 */
const cases: {
  outcome: string;
  endpoint: string;
  auth?: string;
  query?: Record<string, string>;
  expected: number;
  target: boolean;
}[] = [
  ...ENDPOINTS.map((one) => ({
    outcome: `success (${one.name})`,
    endpoint: one.name,
    auth: bearer(valid.key),
    expected: 4,
    target: true,
  })),
  {
    outcome: 'malformed key (bad checksum)',
    endpoint: 'GetBranch',
    auth: bearer(malformed),
    expected: 0,
    target: true,
  },
  { outcome: 'unknown key', endpoint: 'GetBranch', auth: bearer(generateApiKey()), expected: 1, target: true },
  { outcome: 'no Authorization header', endpoint: 'GetBranch', expected: 0, target: false },
  // Counted like a live key, so their floods are limited too (docs/capacity.md "Per key").
  { outcome: 'revoked key', endpoint: 'GetBranch', auth: bearer(revoked.key), expected: 3, target: false },
  { outcome: 'expired key', endpoint: 'GetBranch', auth: bearer(expired.key), expected: 3, target: false },
  { outcome: 'key without read scope', endpoint: 'GetBranch', auth: bearer(noRead.key), expected: 3, target: false },
  {
    outcome: 'last call within the limit',
    endpoint: 'GetBranch',
    auth: bearer(limited.key),
    expected: 4,
    target: false,
  },
  // The last call within the limit used the window up: this container answers from memory.
  { outcome: 'over the limit (429)', endpoint: 'GetBranch', auth: bearer(limited.key), expected: 2, target: false },
  {
    outcome: 'over the limit, known to this container (429)',
    endpoint: 'GetBranch',
    auth: bearer(limited.key),
    expected: 2,
    target: false,
  },
  {
    outcome: 'success, key with an IP allowlist and an expiry',
    endpoint: 'GetBranch',
    auth: bearer(fenced.key),
    expected: 4,
    target: true,
  },
  {
    outcome: "address not on the key's IP allowlist",
    endpoint: 'GetBranch',
    auth: bearer(elsewhere.key),
    expected: 3,
    target: false,
  },
  {
    outcome: 'bad cursor (400)',
    endpoint: 'ListMembers',
    auth: bearer(valid.key),
    query: { cursor: 'x.y' },
    expected: 3,
    target: false,
  },
];

const results = [];
for (const one of cases) {
  const { status, calls, commands: sent } = await invoke(one.endpoint, one.auth, one.query);
  results.push({ outcome: one.outcome, status, calls, expected: one.expected, target: one.target, commands: sent });
}
await dynamo.close();
process.stdout.write(`${JSON.stringify(results)}\n`);
process.exit(0);
