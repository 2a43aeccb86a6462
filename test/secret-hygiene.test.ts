/**
 * No plaintext key is ever stored or logged: the keys table holds hashes, and a run of requests
 * of every kind, logged at DEBUG, never shows a key value or the Authorization header.
 */
import { handler as fallback } from '../functions/fallback';
import { handler as getBranch } from '../functions/get-branch';
import { handler as getProvider } from '../functions/get-payment-provider';
import { handler as listMembers } from '../functions/list-members';
import { handler as listProviders } from '../functions/list-payment-providers';
import { generateApiKey, hashApiKey, redactApiKeys } from '../shared/domain/api-key';
import { logger } from '../shared/lambda/observability';
import fc from 'fast-check';
import {
  captureLogs,
  closedPortEndpoint,
  createKey,
  fixtureKeys,
  invoke,
  loadService,
  scanRaw,
  setUpBranches,
  tableNames,
  usageRecordFor,
} from './support/harness';
import { keyRunsIn, pastedKey } from './support/pasted-key';

/** Every plaintext key this file creates or sends. */
const plaintexts: string[] = [];
const track = async (created: ReturnType<typeof createKey>) => {
  const result = await created;
  plaintexts.push(result.key);
  return result;
};

/** The tell-tale parts of a key: the value, its random part, and its checksum with the end of the random part. */
const fragmentsOf = (key: string) => [key, key.slice(4, 47), key.slice(30)];

const expectNoKeyIn = (text: string) => {
  for (const key of plaintexts) {
    for (const fragment of fragmentsOf(key)) expect(text.includes(fragment) ? fragment : null).toBeNull();
  }
};

let key: string;

beforeAll(async () => {
  const made = await setUpBranches();
  key = made.key;
  plaintexts.push(made.key, made.otherKey);
  await track(createKey({ scopes: ['write', 'billing:read'], name: 'no read' }));
  await track(createKey({ expiresAt: new Date(Date.now() + 3_600_000) }));
});

describe('the keys table', () => {
  it('holds the SHA-256 of each key and its display start, never the key', async () => {
    const items = await scanRaw(tableNames.keys);
    expect(items.length).toBe(plaintexts.length);
    expectNoKeyIn(JSON.stringify(items));
    const hashes = items.map((item) => item.key_hash?.S);
    expect(hashes.sort()).toEqual(plaintexts.map(hashApiKey).sort());
    for (const item of items) expect(item.start?.S).toMatch(/^wsk_[0-9A-Za-z]{4}$/);
  });

  it('gives back no hash either through the repository', async () => {
    const { record } = await track(createKey());
    const listed = await fixtureKeys.listByBranch(record.branch_id);
    expect(JSON.stringify(listed)).not.toContain(hashApiKey(plaintexts.at(-1)!));
    expect(listed.find((one) => one.key_id === record.key_id)).not.toHaveProperty('key_hash');
  });
});

describe('the logs, at DEBUG, over requests of every kind', () => {
  let text: string;
  let messages: string[];

  beforeAll(async () => {
    const { key: noRead } = await track(createKey({ scopes: ['write'] }));
    const { key: expired } = await track(createKey({ expiresAt: new Date(Date.now() - 1000) }));
    const { key: revoked, record } = await track(createKey());
    await fixtureKeys.revoke(record.key_id);
    const unknown = generateApiKey();
    plaintexts.push(unknown);
    // Containers whose database is unreachable, whose branch data table and usage table are missing.
    const unreachable = await loadService({
      DYNAMODB_ENDPOINT: await closedPortEndpoint(),
      DYNAMODB_MAX_ATTEMPTS: '1',
    });
    const noTable = await loadService({ BRANCH_DATA_TABLE: 'no-such-table', USAGE_TABLE: 'no-such-usage-table' });

    const logs = captureLogs([logger, unreachable.logger, noTable.logger], 'DEBUG');
    try {
      const provider = (id: string, withKey?: string) =>
        invoke(getProvider, { path: `/v1/payment-providers/${id}`, pathParameters: { id }, key: withKey });
      await invoke(getBranch, { path: '/v1/branch', key });
      await invoke(listMembers, { path: '/v1/members', key, query: { limit: '2' } });
      await invoke(listProviders, { path: '/v1/payment-providers', key });
      await provider('pp_stripe', key);
      await provider('pp_nope', key);
      await invoke(listMembers, { path: '/v1/members', key, query: { limit: '0' } });
      await invoke(listMembers, { path: '/v1/members', key, query: { cursor: key } });
      await invoke(getBranch, { path: '/v1/branch', key: noRead });
      await invoke(getBranch, { path: '/v1/branch', key: expired });
      await invoke(getBranch, { path: '/v1/branch', key: revoked });
      await invoke(getBranch, { path: '/v1/branch', key: unknown });
      await invoke(getBranch, { path: '/v1/branch', key: key.slice(0, -1) });
      await invoke(getBranch, { path: '/v1/branch', headers: { authorization: `Basic ${key}` } });
      await invoke(getBranch, {
        path: '/v1/branch',
        headers: { authorization: [`Bearer ${key}`, `Bearer ${noRead}`] },
      });
      // A key pasted into the URL by mistake, with and without a valid bearer key.
      await provider(unknown, key);
      await provider(expired);
      await invoke(getBranch, { path: '/v1/branch', key, query: { api_key: key } });
      await invoke(fallback, { path: `/v1/${key}`, key });
      await invoke(fallback, { method: 'POST', path: '/v1/members', key });
      await invoke(unreachable.getBranch, { path: '/v1/branch', key });
      await invoke(noTable.getBranch, { path: '/v1/branch', key });
    } finally {
      logs.restore();
    }
    text = logs.text;
    messages = logs.entries.map((entry) => entry.message);
  });

  it('were written: every kind of line the service logs is in this run', () => {
    expect(messages).toEqual(
      expect.arrayContaining([
        'Usage recorded',
        'Call without a known key',
        'Request failed',
        'Usage record not stored',
      ]),
    );
    expect(messages.filter((message) => message === 'Usage recorded').length).toBeGreaterThanOrEqual(12);
  });

  it('contain no key value, no part of one, and no Authorization header', () => {
    expectNoKeyIn(text);
    expect(text).not.toMatch(/bearer/i);
    expect(text).not.toMatch(/basic /i);
    expect(text).not.toContain('authorization');
  });
});

describe('a key in the URL', () => {
  it('is redacted from the stored usage record path', async () => {
    const unknown = generateApiKey();
    plaintexts.push(unknown);
    const res = await invoke(getProvider, {
      path: `/v1/payment-providers/${unknown}`,
      pathParameters: { id: unknown },
      key,
    });
    expect(res.statusCode).toBe(404);
    expect((await usageRecordFor(res.requestId))?.path).toBe('/api/v1/payment-providers/wsk_[REDACTED]');
    expectNoKeyIn(JSON.stringify(await scanRaw(tableNames.usage)));
  });

  it.each([
    ['/v1/members', '/v1/members'],
    ['/v1/payment-providers/wsk_short', '/v1/payment-providers/wsk_short'],
    ['/a/wsk_0123456789abcdefghij/b', '/a/wsk_[REDACTED]/b'],
    ['/x/KEY/y/KEY', '/x/wsk_[REDACTED]/y/wsk_[REDACTED]'],
    ['/x/KEYextra', '/x/wsk_[REDACTED]'],
  ])('redactApiKeys(%j) is %j', (input, output) => {
    const sample = generateApiKey();
    expect(redactApiKeys(input.replaceAll('KEY', sample))).toBe(output);
  });
});

describe('a key pasted into the URL, partly percent-encoded, next to escapes that do not decode', () => {
  it('is in neither the stored usage record nor the log line, with a key or without', async () => {
    const pastedKeys: string[] = [];
    const logs = captureLogs(logger, 'DEBUG');
    try {
      await fc.assert(
        fc.asyncProperty(pastedKey, async ({ key: pasted, segment }) => {
          pastedKeys.push(pasted);
          const path = `/v1/payment-providers/${segment}`;
          const before = logs.entries.length;
          const res = await invoke(getProvider, { path, pathParameters: { id: segment }, key });
          const anonymous = await invoke(getProvider, { path, pathParameters: { id: segment } });
          expect(anonymous.statusCode).toBe(401);
          const record = await usageRecordFor(res.requestId);
          expect(record?.path).toContain('wsk_[REDACTED]');
          const lines = logs.entries.slice(before);
          expect(lines.map((line) => line.message)).toEqual(
            expect.arrayContaining(['Usage recorded', 'Call without a known key']),
          );
          expect([keyRunsIn(record?.path ?? '', pasted), keyRunsIn(JSON.stringify(lines), pasted)]).toEqual([[], []]);
        }),
        { numRuns: 40 },
      );
    } finally {
      logs.restore();
    }
    const stored = JSON.stringify(await scanRaw(tableNames.usage));
    expect(pastedKeys.flatMap((pasted) => keyRunsIn(stored, pasted))).toEqual([]);
  });
});
