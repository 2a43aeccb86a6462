/**
 * `usage replay` refuses records that cannot have happened: from the future, of a route or method
 * the API does not have, or past a field's bounds. Each is skipped with its line number and
 * reason, against this file's tables; the good record beside them is written.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOperatorContext, type OperatorContext } from '../../lib/operator/context';
import { MAX_CLOCK_SKEW_MS, readLogLine, replayUsageLog } from '../../lib/operator/usage-replay';
import type { UsageRecord } from '../../shared/domain/usage-record';
import { mainBranch } from '../support/fixtures';
import { createKey, fixtureUsage, setUpBranches } from '../support/harness';

let ctx: OperatorContext;
let keyId: string;
const now = new Date();

beforeAll(async () => {
  await setUpBranches();
  ctx = createOperatorContext(process.env);
  keyId = (await createKey()).record.key_id;
});
afterAll(() => ctx.close());

const record = (overrides: Partial<UsageRecord> = {}): UsageRecord => ({
  branch_id: mainBranch.id,
  key_id: keyId,
  method: 'GET',
  path: '/api/v1/branch',
  route: 'GET /v1/branch',
  status: 200,
  response_time_ms: 4,
  timestamp: new Date(now.getTime() - 60_000).toISOString(),
  request_id: `impossible-${Math.random()}`,
  source_ip: '198.51.100.7',
  ...overrides,
});
const line = (usage: unknown) =>
  JSON.stringify({ level: 'ERROR', message: 'Usage record not stored', usage_record: usage });

it.each<[string, Partial<UsageRecord>, RegExp]>([
  ['dated 2030', { timestamp: '2030-01-01T00:00:00.000Z' }, /in the future/],
  ['past the clock skew', { timestamp: new Date(now.getTime() + MAX_CLOCK_SKEW_MS + 1000).toISOString() }, /future/],
  ['a 300 KB route', { route: `GET /${'r'.repeat(300_000)}` }, /a route the API does not have/],
  ['a route the API does not have', { route: 'DELETE /v1/branch' }, /a route the API does not have/],
  ['another method than its route', { method: 'POST' }, /method POST on a GET route/],
  ['a path past 2,048 characters', { path: `/api/${'p'.repeat(2048)}` }, /path not one of at most 2048/],
  ['a path not starting with /', { path: 'api/v1/branch' }, /path/],
  ['a key id past 64 characters', { key_id: `key_${'k'.repeat(61)}` }, /key_id longer than 64/],
  ['a request id past 64 characters', { request_id: 'r'.repeat(65) }, /request_id longer than 64/],
  ['a source IP that is none', { source_ip: 'not-an-ip' }, /source_ip not an IP address/],
])('refuses a record %s', (_, overrides, reason) => {
  const read = readLogLine(line(record(overrides)), now);
  expect(typeof read).toBe('string');
  expect(read).toMatch(/^cannot have happened: /);
  expect(read).toMatch(reason);
  // A reason is one short line: never the value sent (a route of any size).
  expect((read as string).length).toBeLessThan(200);
});

it('accepts a record within the clock skew and of every route the API has', () => {
  const soon = record({ timestamp: new Date(now.getTime() + MAX_CLOCK_SKEW_MS - 1000).toISOString() });
  expect(readLogLine(line(soon), now)).toEqual(soon);
  const provider = record({ route: 'GET /v1/payment-providers/{id}', path: '/api/v1/payment-providers/pp_1' });
  expect(readLogLine(line(provider), now)).toEqual(provider);
});

it('skips each impossible line by number and reason, and writes the possible one', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'replay-impossible-'));
  const file = join(dir, 'function.log');
  const good = record();
  await writeFile(
    file,
    [
      line(record({ timestamp: '2030-01-01T00:00:00.000Z' })),
      line(good),
      line(record({ route: `GET /${'r'.repeat(300_000)}` })),
    ].join('\n'),
  );
  const result = await replayUsageLog(ctx, file, { now });
  expect(result).toMatchObject({ found: 1, stored: 1, skipped_count: 2 });
  expect(result.skipped).toEqual([
    { line: 1, reason: 'cannot have happened: timestamped 2030-01-01T00:00:00.000Z, in the future' },
    { line: 3, reason: 'cannot have happened: a route the API does not have' },
  ]);
  const stored = await fixtureUsage.query({ branchId: mainBranch.id, keyId, limit: 10 });
  expect(stored.records.map((r) => r.request_id)).toEqual([good.request_id]);
});
