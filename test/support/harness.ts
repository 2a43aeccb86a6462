/**
 * Test harness: the real handlers, invoked with the API Gateway v2 events and Lambda context
 * AWS would send, against the embedded DynamoDB (real SDK over HTTP), with this file's tables.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { readDynamoDbSettings, readTableNames } from '../../shared/config';
import { createDocumentClient } from '../../shared/dynamodb';
import type { ApiResponse } from '../../shared/http/response';
import type { ApiContext } from '../../shared/middlewares';
import type { createStack } from '../../shared/stack';
import { BranchDataRepository } from '../../shared/repositories/branch-data';
import { KeysRepository, type CreateKeyInput } from '../../shared/repositories/keys';
import { UsageRepository, type UsageRecord } from '../../shared/repositories/usage';
import type { SeedBranch } from '../../shared/schemas';
import { buildContext, buildEvent, type EventInput } from '../../lib/local/events';
import { ensureTables } from '../../lib/local/dynamo';
import { mainBranch, otherBranch } from './fixtures';

export const tableNames = readTableNames(process.env);
const settings = readDynamoDbSettings(process.env);
/** The harness's own client, separate from the one the handlers use (so it is not counted). */
export const fixtureClient = createDocumentClient(settings);
export const fixtureKeys = new KeysRepository(fixtureClient, tableNames.keys);
export const fixtureUsage = new UsageRepository(fixtureClient, tableNames.usage);
export const fixtureBranchData = new BranchDataRepository(fixtureClient, tableNames.branchData);

export const createTables = async (): Promise<void> => {
  const client = new DynamoDBClient({
    endpoint: settings.endpoint,
    region: settings.region,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  await ensureTables(client, tableNames);
  client.destroy();
};

export const seedBranches = async (branches: SeedBranch[] = [mainBranch, otherBranch]): Promise<void> => {
  for (const branch of branches) await fixtureBranchData.putBranch(branch);
};

/** Creates a key and returns its plaintext value and record. */
export const createKey = (input: Partial<CreateKeyInput> = {}) =>
  fixtureKeys.create({ branchId: mainBranch.id, scopes: ['read'], ...input });

type Handler = ReturnType<typeof createStack>;

export interface InvokeResult extends ApiResponse {
  json: any;
  requestId: string;
}

/** Invokes a handler as Lambda would, with a bearer key if given. */
export const invoke = async (handler: Handler, input: EventInput & { key?: string }): Promise<InvokeResult> => {
  const { key, headers, ...rest } = input;
  const event = buildEvent({
    ...rest,
    headers: {
      host: 'localhost',
      'user-agent': 'jest',
      ...(key ? { authorization: `Bearer ${key}` } : {}),
      ...headers,
    },
  });
  const response = await handler(event, buildContext() as ApiContext);
  return { ...response, json: JSON.parse(response.body), requestId: event.requestContext.requestId };
};

/** All usage records of a branch, newest first. */
export const usageOf = async (branchId = mainBranch.id): Promise<UsageRecord[]> => {
  const records: UsageRecord[] = [];
  let cursor: string | undefined;
  do {
    const page = await fixtureUsage.query({ branchId, limit: 100, ...(cursor ? { cursor } : {}) });
    records.push(...page.records);
    cursor = page.nextCursor;
  } while (cursor);
  return records;
};

/** The usage record of one request, or undefined. */
export const usageRecordFor = async (requestId: string, branchId = mainBranch.id) =>
  (await usageOf(branchId)).find((record) => record.request_id === requestId);

/**
 * Counts the SDK commands a DynamoDB client sends, by adding a step to the real client's
 * middleware stack (nothing is stubbed: the calls still go to the database).
 */
export const countCommands = (client: { middlewareStack: { add: Function } }) => {
  const commands: string[] = [];
  client.middlewareStack.add(
    (next: (args: unknown) => Promise<unknown>, context: { commandName?: string }) => (args: unknown) => {
      commands.push(context.commandName ?? 'unknown');
      return next(args);
    },
    { step: 'initialize', name: `countCommands${Math.random()}` },
  );
  return {
    get commands() {
      return [...commands];
    },
    reset: () => void commands.splice(0),
  };
};

/** Captures every line written to stdout/stderr (Powertools logs) at the given level. */
export const captureLogs = (logger: { setLogLevel(level: string): void }, level = 'DEBUG') => {
  const lines: string[] = [];
  const spies = [process.stdout, process.stderr].map((stream) =>
    jest.spyOn(stream, 'write').mockImplementation((chunk: string | Uint8Array) => {
      lines.push(String(chunk));
      return true;
    }),
  );
  logger.setLogLevel(level);
  return {
    get text() {
      return lines.join('');
    },
    /** Each line parsed as a JSON log entry (lines that aren't JSON are skipped). */
    get entries(): Record<string, any>[] {
      return lines
        .join('')
        .split('\n')
        .filter(Boolean)
        .flatMap((line) => {
          try {
            return [JSON.parse(line)];
          } catch {
            return [];
          }
        });
    },
    restore: () => {
      logger.setLogLevel('SILENT');
      spies.forEach((spy) => spy.mockRestore());
    },
  };
};
