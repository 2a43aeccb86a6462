/**
 * `usage replay` refuses records that cannot have happened: from the future, of a route or method
 * the API does not have, or past a field's bounds (durations, IPs, line length). Each is skipped
 * with its line number and reason, against this file's tables; the good records beside them are
 * written, even when the store refuses one of their batch.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOperatorContext, type OperatorContext } from '../../lib/operator/context';
import {
  boundedLines,
  MAX_CLOCK_SKEW_MS,
  MAX_LINE_BYTES,
  readLogLine,
  replayUsageLog,
} from '../../lib/operator/usage-replay';
import { startFaultProxy } from '../support/fault-proxy';
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
  ['a source IP that is none', { source_ip: 'not-an-ip' }, /source_ip not an IPv4 or IPv6 address/],
  ['an IPv6 address with a 380 KB zone id', { source_ip: `fe80::1%${'z'.repeat(380_000)}` }, /source_ip not an IPv4/],
  ['an IPv6 address with a zone id', { source_ip: 'fe80::1%eth0' }, /of at most 45 characters/],
])('refuses a record %s', (_, overrides, reason) => {
  const read = readLogLine(line(record(overrides)), now);
  expect(typeof read).toBe('string');
  expect(read).toMatch(/^cannot have happened: /);
  expect(read).toMatch(reason);
  // A reason is one short line: never the value sent (a route of any size).
  expect((read as string).length).toBeLessThan(200);
});

it.each([1e308, 1e125, 1e-200, 1e-100, -1, 900_001, 0.001])('refuses a response time of %s ms', (ms) => {
  expect(readLogLine(line(record({ response_time_ms: ms })), now)).toBe('not a valid usage record (response_time_ms)');
});

it('refuses a response time JSON reads as Infinity', () => {
  const text = line(record({ response_time_ms: 1 })).replace('"response_time_ms":1', '"response_time_ms":1e999');
  expect(readLogLine(text, now)).toBe('not a valid usage record (response_time_ms)');
});

it('accepts a response time as the API records it: 0 to 900,000 ms, in hundredths', () => {
  for (const ms of [0, 0.01, 3.5, 12.34, 899_999.99, 900_000]) {
    expect(readLogLine(line(record({ response_time_ms: ms })), now)).toMatchObject({ response_time_ms: ms });
  }
});

it('reads a 600 MB line in flat memory, giving it as too long, and the lines around it', async () => {
  const chunk = Buffer.alloc(1024 * 1024, 'x');
  async function* file() {
    yield Buffer.from('first\r\nsecond\n');
    for (let i = 0; i < 600; i += 1) yield chunk;
    yield Buffer.from('\nlast');
  }
  const before = process.memoryUsage();
  const lines: (string | undefined)[] = [];
  let peak = 0;
  for await (const read of boundedLines(file(), MAX_LINE_BYTES)) {
    lines.push(read);
    const now = process.memoryUsage();
    peak = Math.max(peak, now.heapUsed + now.arrayBuffers - before.heapUsed - before.arrayBuffers);
  }
  expect(lines).toEqual(['first', 'second', undefined, 'last']);
  expect(peak).toBeLessThan(50 * 1024 * 1024);
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
      line(record({ route: `GET /${'r'.repeat(30_000)}` })),
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

it('stores the good lines of a file whose other lines carry poison durations and IPs, naming each bad one', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'replay-poison-'));
  const file = join(dir, 'function.log');
  const poison: Partial<UsageRecord>[] = [
    { response_time_ms: 1e308 },
    { response_time_ms: 1e125 },
    { response_time_ms: 1e-200 },
    { response_time_ms: 1e-100 },
    { source_ip: `fe80::1%${'z'.repeat(380_000)}` },
  ];
  // 21 lines: a poison line after every three good ones.
  const lines = Array.from({ length: 21 }, (_, i) => (i % 4 === 3 ? record(poison[(i - 3) / 4]) : record()));
  await writeFile(file, lines.map(line).join('\n'));
  const result = await replayUsageLog(ctx, file, { now });
  expect(result).toMatchObject({ found: 16, stored: 16, skipped_count: 5 });
  expect(result.skipped).toEqual([
    { line: 4, reason: 'not a valid usage record (response_time_ms)' },
    { line: 8, reason: 'not a valid usage record (response_time_ms)' },
    { line: 12, reason: 'not a valid usage record (response_time_ms)' },
    { line: 16, reason: 'not a valid usage record (response_time_ms)' },
    { line: 20, reason: `longer than ${MAX_LINE_BYTES} bytes` },
  ]);
  const stored = new Set(
    (await fixtureUsage.query({ branchId: mainBranch.id, keyId, limit: 100 })).records.map((r) => r.request_id),
  );
  expect(lines.filter((r) => stored.has(r.request_id)).length).toBe(16);
});

it('skips a line past the length cap by number, and writes the lines around it', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'replay-long-'));
  const file = join(dir, 'function.log');
  const [before, after] = [record(), record()];
  await writeFile(
    file,
    [line(before), `${line(record()).slice(0, -1)}, "pad": "${'p'.repeat(MAX_LINE_BYTES)}"}`, line(after)].join('\n'),
  );
  const result = await replayUsageLog(ctx, file, { now });
  expect(result).toMatchObject({ found: 2, stored: 2, skipped_count: 1 });
  expect(result.skipped).toEqual([{ line: 2, reason: `longer than ${MAX_LINE_BYTES} bytes` }]);
});

// A fault injected on purpose: no record within the bounds above makes DynamoDB refuse it any more.
it('writes the good records of a batch the store refuses, skipping only the one it refuses, by number', async () => {
  const proxy = await startFaultProxy(process.env.DYNAMODB_ENDPOINT!);
  const viaProxy = createOperatorContext({ ...process.env, DYNAMODB_ENDPOINT: proxy.endpoint });
  try {
    const dir = await mkdtemp(join(tmpdir(), 'replay-refused-'));
    const file = join(dir, 'function.log');
    const records = Array.from({ length: 5 }, () => record());
    await writeFile(file, records.map(line).join('\n'));
    // The batch is refused, then the third record written alone.
    proxy.inject('BatchWriteItem', { kind: 'invalid' }, 1);
    proxy.inject('PutItem', { kind: 'invalid' }, 1, 2);
    const result = await replayUsageLog(viaProxy, file, { now });
    expect(result).toMatchObject({ found: 5, stored: 4, skipped_count: 1 });
    expect(result.skipped).toEqual([
      { line: 3, reason: 'the data store refused it (DynamoDB PutItem failed: ValidationException)' },
    ]);
    const stored = new Set(
      (await fixtureUsage.query({ branchId: mainBranch.id, keyId, limit: 100 })).records.map((r) => r.request_id),
    );
    expect(records.map((r) => stored.has(r.request_id))).toEqual([true, true, false, true, true]);
  } finally {
    viaProxy.close();
    await proxy.close();
  }
});
