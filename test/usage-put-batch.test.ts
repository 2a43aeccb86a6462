/**
 * Bulk usage writes (UsageRepository.putBatch, used by the console benchmark): more records
 * than one BatchWriteItem takes, stored exactly as `put` stores them (sort key, TTL).
 */
import type { UsageRecord } from '../shared/domain/usage-record';
import { countCommands, createTables, fixtureClient, fixtureUsage, scanRaw, tableNames } from './support/harness';

beforeAll(() => createTables());

const record = (i: number): UsageRecord => ({
  key_id: 'key_batch',
  branch_id: 'br_batch',
  method: 'GET',
  path: `/api/v1/branch?i=${i}`,
  route: 'GET /v1/branch',
  status: 200,
  response_time_ms: i,
  timestamp: new Date(Date.UTC(2026, 10, 1, 0, 0, i)).toISOString(),
  request_id: `req-${String(i).padStart(3, '0')}`,
});

it('writes 60 records in three BatchWriteItem calls, readable newest first with their TTL', async () => {
  const commands = countCommands(fixtureClient);
  await fixtureUsage.putBatch(
    Array.from({ length: 60 }, (_, i) => record(i)),
    90,
  );
  expect(commands.commands.filter((name) => name === 'BatchWriteItemCommand')).toHaveLength(3);
  const page = await fixtureUsage.query({ branchId: 'br_batch', limit: 100 });
  expect(page.records).toHaveLength(60);
  expect(page.records[0]).toEqual(record(59));
  const raw = (await scanRaw(tableNames.usage)).find((item) => item.request_id?.S === 'req-000');
  expect(raw?.sk?.S).toBe('2026-11-01T00:00:00.000Z#req-000');
  expect(Number(raw?.expires_at_epoch?.N)).toBe(Date.UTC(2026, 10, 1) / 1000 + 90 * 86_400);
});
