/**
 * Bulk usage writes (UsageRepository.putBatch, used by the console benchmark): more records
 * than one BatchWriteItem takes, stored exactly as `put` stores them (sort key, TTL).
 */
import type { BatchWriteCommandInput, BatchWriteCommandOutput } from '@aws-sdk/lib-dynamodb';
import type { UsageRecord } from '../shared/domain/usage-record';
import { BATCH_ATTEMPTS, createDocumentClient } from '../shared/data/dynamodb';
import { DataStoreUnavailableError } from '../shared/data/data-store-errors';
import { UsageRepository } from '../shared/data/repositories/usage';
import { readDynamoDbSettings } from '../shared/config/env';
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

/**
 * A client on which DynamoDB takes only the first item of each of the next `times` batch writes and
 * leaves the rest unprocessed: a fault injected in the client's own stack, the one stub here.
 */
const partlyProcessingUsage = (times: number) => {
  const client = createDocumentClient(readDynamoDbSettings(process.env));
  let left = times;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName !== 'BatchWriteItemCommand' || left <= 0) return next(args);
      left -= 1;
      const input = args.input as BatchWriteCommandInput;
      const [table, requests] = Object.entries(input.RequestItems!)[0]!;
      const result = await next({ ...args, input: { ...input, RequestItems: { [table]: requests.slice(0, 1) } } });
      const rest = requests.slice(1);
      (result.output as BatchWriteCommandOutput).UnprocessedItems = rest.length > 0 ? { [table]: rest } : {};
      return result;
    },
    { step: 'initialize', name: 'partialBatch' },
  );
  return { usage: new UsageRepository(client, tableNames.usage), commands: countCommands(client) };
};

describe('items a batch write leaves unprocessed', () => {
  it('are sent again until every record is stored', async () => {
    const { usage, commands } = partlyProcessingUsage(3);
    const records = Array.from({ length: 5 }, (_, i) => ({ ...record(i), branch_id: 'br_partial' }));
    await usage.putBatch(records, 90);
    expect(commands.commands.filter((name) => name === 'BatchWriteItemCommand')).toHaveLength(4);
    expect((await fixtureUsage.query({ branchId: 'br_partial', limit: 10 })).records).toHaveLength(5);
  });

  it(`fail the write as unavailable when some are still left after ${BATCH_ATTEMPTS} sends`, async () => {
    const { usage, commands } = partlyProcessingUsage(Infinity);
    const records = Array.from({ length: BATCH_ATTEMPTS + 2 }, (_, i) => ({ ...record(i), branch_id: 'br_stuck' }));
    await expect(usage.putBatch(records, 90)).rejects.toBeInstanceOf(DataStoreUnavailableError);
    expect(commands.commands.filter((name) => name === 'BatchWriteItemCommand')).toHaveLength(BATCH_ATTEMPTS);
  });
});
