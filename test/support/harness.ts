/**
 * Test harness: the real handlers, invoked with the API Gateway v2 events and Lambda context
 * AWS would send, against the embedded DynamoDB (real SDK over HTTP), with this file's tables.
 */
import { once } from 'node:events';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { DynamoDBClient, ScanCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { readDynamoDbSettings, readTableNames } from '../../shared/config/env';
import { tableDefinitions } from '../../shared/data/tables';
import { createDocumentClient } from '../../shared/data/dynamodb';
import type { ApiResponse } from '../../shared/api/http/response';
import type { ApiContext } from '../../shared/api/middlewares';
import type { createMiddlewareChain } from '../../shared/api/middleware-chain';
import { timeoutSecondsOf } from '../../shared/api/routes';
import type * as Observability from '../../shared/lambda/observability';
import type * as Runtime from '../../shared/lambda/runtime';
import { createRepositories } from '../../shared/data/repositories';
import type { CreateKeyInput } from '../../shared/data/repositories/keys';
import type { UsageRecord } from '../../shared/domain/usage-record';
import type { SeedBranch } from '../../shared/domain/schemas';
import { buildContext, buildEvent, type EventInput } from '../../lib/local/events';
import { invokeFunction } from '../../lib/local/invoke';
import { ensureTables } from '../../lib/operator/tables';
import { expectToMatchContract } from './contract';
import { mainBranch, otherBranch } from './fixtures';

/** Every table of this test file, the rollups too (the operator tooling reads them). */
export const tableNames = readTableNames(
  process.env,
  tableDefinitions.map((definition) => definition.name),
);
const settings = readDynamoDbSettings(process.env);
/** The harness's own client, separate from the one the handlers use (so it is not counted). */
export const fixtureClient = createDocumentClient(settings);
export const {
  keys: fixtureKeys,
  usage: fixtureUsage,
  branchData: fixtureBranchData,
} = createRepositories(fixtureClient, tableNames);
/** A plain client for table setup and raw scans (items as stored, not unmarshalled). */
const rawClient = new DynamoDBClient({
  endpoint: settings.endpoint,
  region: settings.region,
  credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
});

export const createTables = async (): Promise<void> => {
  await ensureTables(rawClient, tableNames);
};

export const seedBranches = async (branches: SeedBranch[] = [mainBranch, otherBranch]): Promise<void> => {
  for (const branch of branches) await fixtureBranchData.putBranch(branch);
};

/** Creates a key and returns its plaintext value and record. */
export const createKey = (input: Partial<CreateKeyInput> = {}) =>
  fixtureKeys.create({ branchId: mainBranch.id, scopes: ['read'], ...input });

/** This file's tables, both fixture branches, and a read key for each branch. */
export const setUpBranches = async () => {
  await createTables();
  await seedBranches();
  const main = await createKey();
  const other = await createKey({ branchId: otherBranch.id });
  return { key: main.key, keyId: main.record.key_id, otherKey: other.key };
};

type Handler = ReturnType<typeof createMiddlewareChain>;

export interface InvokeResult extends ApiResponse {
  json: any;
  requestId: string;
}

/** Invokes a handler as Lambda would, with a bearer key if given; `context` replaces parts of Lambda's. */
export const invoke = async (
  handler: Handler,
  input: EventInput & { key?: string },
  context: Partial<ApiContext> = {},
): Promise<InvokeResult> => {
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
  const lambda = buildContext(undefined, timeoutSecondsOf(event.routeKey)) as ApiContext;
  const response = await invokeFunction(handler, event, { ...lambda, ...context });
  // Every response any test sees must match the OpenAPI document, status and headers included.
  expectToMatchContract({
    method: event.requestContext.http.method,
    path: rest.path,
    statusCode: response.statusCode,
    headers: response.headers,
    body: response.body,
  });
  return { ...response, json: JSON.parse(response.body), requestId: event.requestContext.requestId };
};

/** A response header by name, case-insensitively (HTTP header names are). */
export const headerOf = (res: ApiResponse, name: string): string | undefined =>
  Object.entries(res.headers).find(([candidate]) => candidate.toLowerCase() === name.toLowerCase())?.[1];

/** The headers every response carries (docs/decisions.md), success or error; X-Request-Id is the event's request id. */
export const expectCommonHeaders = (res: InvokeResult): void => {
  expect({
    'content-type': headerOf(res, 'content-type'),
    'cache-control': headerOf(res, 'cache-control'),
    'x-content-type-options': headerOf(res, 'x-content-type-options'),
    'x-request-id': headerOf(res, 'x-request-id'),
  }).toEqual({
    'content-type': 'application/json; charset=utf-8',
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    'x-request-id': res.requestId,
  });
};

/** The WWW-Authenticate values of docs/decisions.md (RFC 6750). */
export const CHALLENGE = {
  /** 401 when no token was sent. */
  noToken: 'Bearer realm="branch-api"',
  /** 401 when a token was sent but is not accepted. */
  invalidToken: 'Bearer realm="branch-api", error="invalid_token"',
  /** 403 for a key without read. */
  insufficientScope: 'Bearer realm="branch-api", error="insufficient_scope", scope="read"',
} as const;

/** An error response of the documented shape: exactly {error:{code,message,request_id}}, and the common headers. */
export const expectError = (res: InvokeResult, status: number, code: string): void => {
  expect({ status: res.statusCode, body: res.json }).toEqual({
    status,
    body: { error: { code, message: expect.stringMatching(/\S/), request_id: res.requestId } },
  });
  expectCommonHeaders(res);
};

/** All usage records of a branch, newest first. */
export const usageOf = async (branchId = mainBranch.id): Promise<UsageRecord[]> => {
  const records: UsageRecord[] = [];
  let position: string | undefined;
  do {
    const page = await fixtureUsage.query({ branchId, limit: 100, ...(position ? { position } : {}) });
    records.push(...page.records);
    position = page.nextPosition;
  } while (position);
  return records;
};

/** The usage record of one request, or undefined. */
export const usageRecordFor = async (requestId: string, branchId = mainBranch.id) =>
  (await usageOf(branchId)).find((record) => record.request_id === requestId);

export interface SentCommand {
  /** e.g. `GetItemCommand`. */
  command: string;
  input: Record<string, any>;
}

/**
 * Counts the SDK commands a DynamoDB client sends, by adding a step to the real client's
 * middleware stack (nothing is stubbed: the calls still go to the database). SDK retries happen
 * below this step, so each command counts once however many attempts it takes.
 */
export const countCommands = (client: { middlewareStack: { add: Function } }) => {
  const sent: SentCommand[] = [];
  client.middlewareStack.add(
    (next: (args: { input: unknown }) => Promise<unknown>, context: { commandName?: string }) =>
      (args: { input: unknown }) => {
        sent.push({ command: context.commandName ?? 'unknown', input: args.input as Record<string, any> });
        return next(args);
      },
    { step: 'initialize', name: `countCommands${Math.random()}` },
  );
  return {
    get commands() {
      return sent.map((one) => one.command);
    },
    get sent() {
      return [...sent];
    },
    reset: () => void sent.splice(0),
  };
};

/** Every item of a table as DynamoDB stores it (raw attribute values, no unmarshalling). */
export const scanRaw = async (tableName: string): Promise<Record<string, AttributeValue>[]> => {
  const items: Record<string, AttributeValue>[] = [];
  let startKey: Record<string, AttributeValue> | undefined;
  do {
    const page = await rawClient.send(new ScanCommand({ TableName: tableName, ExclusiveStartKey: startKey }));
    items.push(...(page.Items ?? []));
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return items;
};

/** An endpoint on which nothing listens: connections to it are refused. */
export const closedPortEndpoint = async (): Promise<string> => {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
};

/** The five functions and the container state of one module registry. */
export interface Service {
  getBranch: Handler;
  listMembers: Handler;
  listProviders: Handler;
  getProvider: Handler;
  fallback: Handler;
  /** POST /security/secret-scanning (reads SECRET_SCANNING_KEYS_URL at load). */
  secretScanning: Handler;
  /** That registry's runtime: `documentClient`, repositories, config. */
  runtime: typeof Runtime;
  /** That registry's logger, for captureLogs(). */
  logger: typeof Observability.logger;
}

/**
 * Loads the functions in a fresh module registry with `env` applied while they load, as a new
 * Lambda container with that configuration would (config is read once, at module load). The
 * process environment is restored afterwards; the loaded container keeps what it read.
 * A value of `undefined` removes the variable.
 */
export const loadService = async (env: Record<string, string | undefined> = {}): Promise<Service> => {
  const saved = Object.fromEntries(Object.keys(env).map((name) => [name, process.env[name]]));
  const apply = (values: Record<string, string | undefined>) => {
    for (const [name, value] of Object.entries(values)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  };
  apply(env);
  try {
    let service: Service | undefined;
    await jest.isolateModulesAsync(async () => {
      const [getBranch, listMembers, listProviders, getProvider, fallback, secretScanning, runtime, observability] =
        await Promise.all([
          import('../../functions/get-branch'),
          import('../../functions/list-members'),
          import('../../functions/list-payment-providers'),
          import('../../functions/get-payment-provider'),
          import('../../functions/fallback'),
          import('../../functions/secret-scanning'),
          import('../../shared/lambda/runtime'),
          import('../../shared/lambda/observability'),
        ]);
      service = {
        getBranch: getBranch.handler,
        listMembers: listMembers.handler,
        listProviders: listProviders.handler,
        getProvider: getProvider.handler,
        fallback: fallback.handler,
        secretScanning: secretScanning.handler,
        runtime,
        logger: observability.logger,
      };
    });
    return service!;
  } finally {
    apply(saved);
  }
};

/** Settings that make a fault surface within a few seconds, with room for a healthy call beside a CPU hog. */
export const FAST_FAILURE_ENV = {
  DYNAMODB_CONNECT_TIMEOUT_MS: '1000',
  DYNAMODB_REQUEST_TIMEOUT_MS: '1000',
  DYNAMODB_MAX_ATTEMPTS: '2',
  // 2 × 1 s + up to 1 s of throttling backoff (shared/data/dynamodb.ts callBoundMs).
  DYNAMODB_DEADLINE_MS: '3000',
} as const;

interface LevelledLogger {
  setLogLevel(level: string): void;
  refreshSampleRateCalculation(): void;
}

/** Captures every line written to stdout/stderr (Powertools logs) at the given level. */
export const captureLogs = (logger: LevelledLogger | readonly LevelledLogger[], level = 'DEBUG') => {
  const loggers: readonly LevelledLogger[] = Array.isArray(logger) ? logger : [logger as LevelledLogger];
  const lines: string[] = [];
  const spies = [process.stdout, process.stderr].map((stream) =>
    jest.spyOn(stream, 'write').mockImplementation((chunk: string | Uint8Array) => {
      lines.push(String(chunk));
      return true;
    }),
  );
  // injectLambdaContext restores the configured level at every invocation (Powertools' debug
  // sampling); held off while capturing so the chosen level stays. Only that refresh is stubbed.
  const held: LevelledLogger[] = [];
  const holds: jest.SpyInstance[] = [];
  const hold = (one: LevelledLogger) => {
    holds.push(jest.spyOn(one, 'refreshSampleRateCalculation').mockImplementation(() => {}));
    one.setLogLevel(level);
    held.push(one);
  };
  loggers.forEach(hold);
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
    /** Another container's logger, loaded after the capture began: capture it too. */
    add: hold,
    restore: () => {
      held.forEach((one) => one.setLogLevel('SILENT'));
      [...spies, ...holds].forEach((spy) => spy.mockRestore());
    },
  };
};
