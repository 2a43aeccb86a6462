/**
 * How many DynamoDB calls each kind of request costs, counted on the handlers' own client
 * (shared/lambda/runtime.ts `documentClient`): a step added to its real middleware stack records each
 * command; nothing is stubbed and every call still reaches the embedded DynamoDB.
 */
import { handler as fallback } from '../functions/fallback';
import { handler as getBranch } from '../functions/get-branch';
import { handler as getProvider } from '../functions/get-payment-provider';
import { handler as listMembers } from '../functions/list-members';
import { handler as listProviders } from '../functions/list-payment-providers';
import { generateApiKey } from '../shared/domain/api-key';
import { documentClient } from '../shared/lambda/runtime';
import { countCommands, createKey, fixtureKeys, invoke, tableNames, setUpBranches } from './support/harness';

const counter = countCommands(documentClient);
/** When each command is sent and answered, from a step on the same client (nothing stubbed). */
const timeline: string[] = [];
documentClient.middlewareStack.add(
  (next, context) => async (args) => {
    timeline.push(`sent ${context.commandName}`);
    try {
      return await next(args);
    } finally {
      timeline.push(`answered ${context.commandName}`);
    }
  },
  { step: 'initialize', name: 'timeline' },
);
let key: string;

beforeAll(async () => {
  ({ key } = await setUpBranches());
});

beforeEach(() => counter.reset());

const provider = (id: string, withKey = key) =>
  invoke(getProvider, { path: `/v1/payment-providers/${id}`, pathParameters: { id }, key: withKey });

describe('a request refused before any lookup costs nothing', () => {
  it.each([
    ['no Authorization header', undefined],
    ['"Bearer" alone', 'Bearer'],
    ['Basic credentials', 'Basic dXNlcjpwYXNz'],
    ['a short token', 'Bearer wsk_abc'],
    ['a bad checksum', 'Bearer BADSUM'],
    ['a wrong prefix', 'Bearer PREFIX'],
    ['two keys joined by a comma', 'Bearer KEY,Bearer KEY'],
  ])('%s: 0 calls', async (_label, authorization) => {
    const value = authorization
      ?.replace('BADSUM', `${key.slice(0, -1)}${key.endsWith('0') ? '1' : '0'}`)
      .replace('PREFIX', `wsx_${key.slice(4)}`)
      .replaceAll('KEY', key);
    const res = await invoke(getBranch, { path: '/v1/branch', headers: { authorization: value } });
    expect(res.statusCode).toBe(401);
    expect(counter.commands).toEqual([]);
  });

  it('the catch-all function: 0 calls for a 404 or a 405', async () => {
    expect((await invoke(fallback, { path: '/v1/nope', key })).statusCode).toBe(404);
    expect((await invoke(fallback, { method: 'POST', path: '/v1/members', key })).statusCode).toBe(405);
    expect(counter.commands).toEqual([]);
  });
});

describe('an unknown key', () => {
  it('costs exactly 1 call: a strongly consistent GetItem on the keys table, and no usage write', async () => {
    const res = await invoke(getBranch, { path: '/v1/branch', key: generateApiKey() });
    expect(res.statusCode).toBe(401);
    expect(counter.sent).toEqual([
      {
        command: 'GetItemCommand',
        input: {
          TableName: tableNames.keys,
          Key: { key_hash: expect.stringMatching(/^[0-9a-f]{64}$/) },
          ConsistentRead: true,
        },
      },
    ]);
  });
});

describe('a successful request', () => {
  it.each([
    ['GET /v1/branch', () => invoke(getBranch, { path: '/v1/branch', key }), 'GetItemCommand'],
    ['GET /v1/members', () => invoke(listMembers, { path: '/v1/members', key }), 'QueryCommand'],
    ['GET /v1/payment-providers', () => invoke(listProviders, { path: '/v1/payment-providers', key }), 'QueryCommand'],
    ['GET /v1/payment-providers/{id}', () => provider('pp_stripe'), 'GetItemCommand'],
  ])(
    '%s costs exactly 4 calls in 3 round trips: key lookup, then one read beside the rate-limit counter, then usage write',
    async (_route, request, read) => {
      timeline.splice(0);
      expect((await request()).statusCode).toBe(200);
      expect(counter.commands).toHaveLength(4);
      const [lookup, ...rest] = counter.sent;
      const usage = rest.pop();
      expect(lookup?.input).toMatchObject({ TableName: tableNames.keys, ConsistentRead: true });
      expect(usage).toMatchObject({ command: 'PutItemCommand', input: { TableName: tableNames.usage } });
      const data = rest.find((one) => one.command === read);
      const count = rest.find((one) => one.command === 'UpdateItemCommand');
      expect(data?.input).toMatchObject({ TableName: tableNames.branchData });
      expect(count?.input).toMatchObject({ TableName: tableNames.rateLimits, ReturnValues: 'UPDATED_NEW' });
      // Three sequential round trips: the read and the counter are both sent before either answers.
      expect(timeline).toEqual([
        'sent GetItemCommand',
        'answered GetItemCommand',
        ...(['sent', 'sent', 'answered', 'answered'] as const).map((step) => expect.stringMatching(`^${step} `)),
        'sent PutItemCommand',
        'answered PutItemCommand',
      ]);
    },
  );

  it('reads with Query or GetItem, never Scan, on every page of a list', async () => {
    let cursor: string | null = null;
    do {
      const res = await invoke(listMembers, {
        path: '/v1/members',
        key,
        query: { limit: '7', ...(cursor ? { cursor } : {}) },
      });
      cursor = res.json.next_cursor;
    } while (cursor);
    expect(counter.commands).toHaveLength(4 * 4);
    expect(
      counter.commands.filter(
        (command) => !['GetItemCommand', 'PutItemCommand', 'UpdateItemCommand'].includes(command),
      ),
    ).toEqual(Array(4).fill('QueryCommand'));
    for (const { input } of counter.sent.filter((one) => one.command === 'QueryCommand')) {
      expect(input.ExpressionAttributeValues[':branch']).toBe('br_main');
    }
  });
});

describe('a refused request with a known key', () => {
  it('costs 3 calls (lookup, rate-limit count, usage write) when the key is revoked or expired', async () => {
    const { key: expired } = await createKey({ expiresAt: new Date(Date.now() - 1000) });
    const { key: revoked, record } = await createKey();
    await fixtureKeys.revoke(record.key_id);
    counter.reset();
    for (const refused of [expired, revoked]) {
      expect((await invoke(getBranch, { path: '/v1/branch', key: refused })).statusCode).toBe(401);
      // Counted like a live key (docs/capacity.md "Per key"), so a refused key's flood is limited too.
      expect(counter.commands).toEqual(['GetItemCommand', 'UpdateItemCommand', 'PutItemCommand']);
      counter.reset();
    }
  });

  it('costs 3 calls (lookup, rate-limit counter, usage write) and reads no branch data', async () => {
    const { key: noRead } = await createKey({ scopes: ['write'] });
    counter.reset();
    for (const request of [
      () => invoke(getBranch, { path: '/v1/branch', key: noRead }),
      () => invoke(listMembers, { path: '/v1/members', key, query: { limit: '0' } }),
      () => invoke(listMembers, { path: '/v1/members', key, query: { cursor: 'forged' } }),
      () => provider('not%20an%20id'),
    ]) {
      expect((await request()).statusCode).toBeGreaterThanOrEqual(400);
      expect(counter.commands).toEqual(['GetItemCommand', 'UpdateItemCommand', 'PutItemCommand']);
      counter.reset();
    }
  });
});

describe('a key with an IP allowlist and an expiry (docs/decisions.md "Key lifecycle")', () => {
  it('costs the same as any key: 4 calls for a success, 3 when the address is not on the list', async () => {
    const { key: limited } = await createKey({
      allowedIps: ['10.0.0.0/8'],
      expiresAt: new Date(Date.now() + 86_400_000),
    });
    counter.reset();
    const inside = await invoke(getBranch, { path: '/v1/branch', key: limited, sourceIp: '10.1.2.3' });
    expect(inside.statusCode).toBe(200);
    expect(counter.commands).toEqual(['GetItemCommand', 'UpdateItemCommand', 'GetItemCommand', 'PutItemCommand']);
    counter.reset();
    const outside = await invoke(getBranch, { path: '/v1/branch', key: limited, sourceIp: '192.0.2.1' });
    expect(outside.statusCode).toBe(403);
    // Counted against its rate limit (the key is neither revoked nor expired), then refused.
    expect(counter.commands).toEqual(['GetItemCommand', 'UpdateItemCommand', 'PutItemCommand']);
  });

  it('a rolled key in its grace period and its successor each cost the 4 calls of a success', async () => {
    const { key: old, record } = await createKey();
    const rolled = await fixtureKeys.roll({ keyId: record.key_id, branchId: record.branch_id, graceMs: 60_000 });
    for (const one of [old, rolled.key]) {
      counter.reset();
      expect((await invoke(getBranch, { path: '/v1/branch', key: one })).statusCode).toBe(200);
      expect(counter.commands).toEqual(['GetItemCommand', 'UpdateItemCommand', 'GetItemCommand', 'PutItemCommand']);
    }
  });
});
