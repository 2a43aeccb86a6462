/**
 * One usage record per call made with a known key (docs/decisions.md "Usage records"), and what happens
 * when the record cannot be written: the response is unchanged and the whole record is logged.
 */
import { usageShardOf } from '../shared/data/repositories/usage-shards';
import { handler as getBranch } from '../functions/get-branch';
import { handler as getProvider } from '../functions/get-payment-provider';
import { handler as listMembers } from '../functions/list-members';
import { generateApiKey } from '../shared/domain/api-key';
import { logger } from '../shared/lambda/observability';
import type { UsageRecord } from '../shared/domain/usage-record';
import { startFaultProxy } from './support/fault-proxy';
import { mainBranch } from './support/fixtures';
import {
  FAST_FAILURE_ENV,
  captureLogs,
  createKey,
  fixtureKeys,
  headerOf,
  invoke,
  loadService,
  scanRaw,
  tableNames,
  usageRecordFor,
  type InvokeResult,
  setUpBranches,
} from './support/harness';

const DAY = 86_400;
let key: string;
let keyId: string;

beforeAll(async () => {
  ({ key, keyId } = await setUpBranches());
});

/** Runs a request and returns its response and stored record, checking the record's time stamp. */
const recorded = async (request: () => Promise<InvokeResult>) => {
  const before = Date.now();
  const res = await request();
  const after = Date.now();
  const record = await usageRecordFor(res.requestId);
  expect(record).toBeDefined();
  const at = Date.parse(record!.timestamp);
  expect(record!.timestamp).toBe(new Date(at).toISOString());
  expect(at).toBeGreaterThanOrEqual(before);
  expect(at).toBeLessThanOrEqual(after);
  expect(record!.response_time_ms).toBeGreaterThanOrEqual(0);
  expect(record!.response_time_ms).toBeLessThan(after - before + 1);
  return { res, record: record! };
};

const expected = (res: InvokeResult, path: string, route: string, id = keyId): UsageRecord => ({
  key_id: id,
  branch_id: mainBranch.id,
  method: 'GET',
  path,
  route,
  status: res.statusCode,
  response_time_ms: expect.any(Number),
  timestamp: expect.any(String),
  request_id: res.requestId,
  // The gateway's sourceIp of the event (lib/local/events.ts: loopback).
  source_ip: '127.0.0.1',
});

describe('a record per call with a known key', () => {
  it('200: every field, the path as requested with the /api stage prefix, the route template', async () => {
    const { res, record } = await recorded(() =>
      invoke(getProvider, { path: '/v1/payment-providers/pp_stripe', pathParameters: { id: 'pp_stripe' }, key }),
    );
    expect(res.statusCode).toBe(200);
    expect(record).toEqual(expected(res, '/api/v1/payment-providers/pp_stripe', 'GET /v1/payment-providers/{id}'));
  });

  it('X-Request-Id equals the record’s request_id', async () => {
    const { res, record } = await recorded(() => invoke(getBranch, { path: '/v1/branch', key }));
    expect(headerOf(res, 'x-request-id')).toBe(record.request_id);
  });

  it('400', async () => {
    const { res, record } = await recorded(() =>
      invoke(listMembers, { path: '/v1/members', key, query: { limit: '0' } }),
    );
    expect(res.statusCode).toBe(400);
    expect(record).toEqual(expected(res, '/api/v1/members', 'GET /v1/members'));
  });

  it('404', async () => {
    const { res, record } = await recorded(() =>
      invoke(getProvider, { path: '/v1/payment-providers/pp_klarna', pathParameters: { id: 'pp_klarna' }, key }),
    );
    expect(res.statusCode).toBe(404);
    expect(record).toEqual(expected(res, '/api/v1/payment-providers/pp_klarna', 'GET /v1/payment-providers/{id}'));
  });

  it.each([
    ['expired', () => createKey({ expiresAt: new Date(Date.now() - 1000) })],
    [
      'revoked',
      async () => {
        const created = await createKey();
        await fixtureKeys.revoke(created.record.key_id);
        return created;
      },
    ],
  ])('401 with an %s key', async (state, makeKey) => {
    const { key: refused, record: stored } = await makeKey();
    const { res, record } = await recorded(() => invoke(getBranch, { path: '/v1/branch', key: refused }));
    expect([res.statusCode, res.json.error.code]).toEqual([401, `${state}_api_key`]);
    expect(record).toEqual(expected(res, '/api/v1/branch', 'GET /v1/branch', stored.key_id));
  });

  it('403', async () => {
    const { key: noRead, record: stored } = await createKey({ scopes: ['write'] });
    const { res, record } = await recorded(() => invoke(listMembers, { path: '/v1/members', key: noRead }));
    expect(res.statusCode).toBe(403);
    expect(record).toEqual(expected(res, '/api/v1/members', 'GET /v1/members', stored.key_id));
  });

  it('is stored with a TTL of the retention (90 days by default) and no other extra attribute', async () => {
    const { res, record } = await recorded(() => invoke(getBranch, { path: '/v1/branch', key }));
    const raw = (await scanRaw(tableNames.usage)).find((item) => item.request_id?.S === res.requestId)!;
    expect(Object.keys(raw).sort()).toEqual([...Object.keys(record), 'expires_at_epoch', 'pk', 'sk'].sort());
    // The write shard (docs/capacity.md "Per branch"), from the request id.
    const shard = raw.pk!.S!.slice(`${record.branch_id}#`.length);
    expect(Number(shard)).toBe(usageShardOf(record.request_id));
    expect(Number(raw.expires_at_epoch!.N)).toBe(Math.floor(Date.parse(record.timestamp) / 1000) + 90 * DAY);
    expect(raw.sk!.S).toBe(`${record.timestamp}#${record.request_id}`);
  });
});

describe('no record without a known key', () => {
  it.each([
    ['no key', undefined],
    ['a malformed key', 'wsk_nope'],
    ['an unknown key', generateApiKey()],
  ])('%s: nothing stored, one info log line instead', async (_label, noKey) => {
    const logs = captureLogs(logger, 'INFO');
    const res = await invoke(getBranch, { path: '/v1/branch', key: noKey }).finally(logs.restore);
    expect(res.statusCode).toBe(401);
    const stored = await scanRaw(tableNames.usage);
    expect(stored.length).toBeGreaterThan(0);
    expect(stored.filter((item) => item.request_id?.S === res.requestId)).toEqual([]);
    expect(logs.entries).toEqual([
      expect.objectContaining({
        level: 'INFO',
        message: 'Call without a known key',
        request_id: res.requestId,
        method: 'GET',
        path: '/api/v1/branch',
        status: 401,
      }),
    ]);
  });
});

describe('a usage write that fails', () => {
  it('leaves the response unchanged and logs the whole record at error level (usage table missing)', async () => {
    // A real failure: this container's USAGE_TABLE names a table that does not exist.
    const broken = await loadService({ USAGE_TABLE: 'no-such-usage-table' });
    const logs = captureLogs(broken.logger, 'DEBUG');
    const normal = await invoke(getBranch, { path: '/v1/branch', key });
    let res: InvokeResult;
    try {
      res = await invoke(broken.getBranch, { path: '/v1/branch', key });
    } finally {
      logs.restore();
    }
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe(normal.body);
    // Apart from the request id and the remaining count (the second call counted one more).
    const { 'X-Request-Id': _a, RateLimit: left, ...headers } = res.headers;
    const { 'X-Request-Id': _b, RateLimit: normalLeft, ...normalHeaders } = normal.headers;
    expect(headers).toEqual(normalHeaders);
    expect([left, normalLeft]).toEqual([
      expect.stringMatching(/^"key";r=\d+;t=1$/),
      expect.stringMatching(/^"key";r=/),
    ]);

    const failures = logs.entries.filter((entry) => entry.message === 'Usage record not stored');
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatchObject({ level: 'ERROR', error: { name: 'DataStoreError' } });
    // The whole record, exactly as it would have been stored, so it can be replayed.
    expect(failures[0]!.usage_record).toEqual(expected(res, '/api/v1/branch', 'GET /v1/branch'));
    // A metric is emitted for the alarm (Embedded Metric Format on stdout).
    expect(logs.text).toContain('"UsageRecordWriteFailed"');
  });

  it('leaves an error response unchanged too', async () => {
    const broken = await loadService({ USAGE_TABLE: 'no-such-usage-table' });
    const { key: expired } = await createKey({ expiresAt: new Date(Date.now() - 1000) });
    const logs = captureLogs(broken.logger, 'ERROR');
    const res = await invoke(broken.getBranch, { path: '/v1/branch', key: expired }).finally(logs.restore);
    expect([res.statusCode, res.json.error.code]).toEqual([401, 'expired_api_key']);
    expect(logs.entries.find((entry) => entry.message === 'Usage record not stored')?.usage_record).toMatchObject({
      status: 401,
      request_id: res.requestId,
    });
  });

  it('once is retried and stored, and nothing is logged as lost', async () => {
    const proxy = await startFaultProxy(process.env.DYNAMODB_ENDPOINT!);
    try {
      const service = await loadService({ ...FAST_FAILURE_ENV, DYNAMODB_ENDPOINT: proxy.endpoint });
      proxy.inject('PutItem', { kind: 'error' }, 1);
      const logs = captureLogs(service.logger, 'WARN');
      const res = await invoke(service.getBranch, { path: '/v1/branch', key }).finally(logs.restore);
      expect(res.statusCode).toBe(200);
      expect(proxy.requests.filter((r) => r.operation === 'PutItem').map((r) => r.outcome)).toEqual([
        'error',
        'forwarded',
      ]);
      expect(await usageRecordFor(res.requestId)).toEqual(expected(res, '/api/v1/branch', 'GET /v1/branch'));
      expect(logs.entries).toEqual([]);
    } finally {
      await proxy.close();
    }
  });

  it('on every attempt leaves the response unchanged and logs the record', async () => {
    const proxy = await startFaultProxy(process.env.DYNAMODB_ENDPOINT!);
    try {
      const service = await loadService({ ...FAST_FAILURE_ENV, DYNAMODB_ENDPOINT: proxy.endpoint });
      proxy.inject('PutItem', { kind: 'throttle' });
      const logs = captureLogs(service.logger, 'ERROR');
      const res = await invoke(service.listMembers, { path: '/v1/members', key }).finally(logs.restore);
      expect(res.statusCode).toBe(200);
      expect(res.json.data).toHaveLength(23);
      expect(await usageRecordFor(res.requestId)).toBeUndefined();
      expect(logs.entries.find((entry) => entry.message === 'Usage record not stored')).toMatchObject({
        usage_record: { request_id: res.requestId, status: 200 },
        error: { name: 'DataStoreUnavailableError' },
      });
    } finally {
      await proxy.close();
    }
  });
});

describe('response_time_ms', () => {
  it('measures the handling time, database included', async () => {
    const proxy = await startFaultProxy(process.env.DYNAMODB_ENDPOINT!);
    try {
      const service = await loadService({ DYNAMODB_ENDPOINT: proxy.endpoint });
      proxy.inject('Query', { kind: 'delay', ms: 80 });
      const res = await invoke(service.listMembers, { path: '/v1/members', key });
      const record = await usageRecordFor(res.requestId);
      expect(record?.response_time_ms).toBeGreaterThanOrEqual(80);
    } finally {
      await proxy.close();
    }
  });
});
