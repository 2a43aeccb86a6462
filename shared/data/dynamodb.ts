/**
 * The DynamoDB document client and the translation of SDK failures into domain errors.
 * Every call is bounded by the SDK itself: attempts × request timeout + the retry backoff
 * (docs/reliability.md "Deadlines"), so a request can never hang and no attempt outlives it.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  BatchGetCommand,
  BatchWriteCommand,
  DeleteCommand,
  DynamoDBDocumentClient,
  GetCommand,
  paginateQuery,
  paginateScan,
  PutCommand,
  QueryCommand,
  UpdateCommand,
  type BatchGetCommandInput,
  type BatchWriteCommandInput,
  type DeleteCommandInput,
  type GetCommandInput,
  type PutCommandInput,
  type QueryCommandInput,
  type ScanCommandInput,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { ConditionNotMetError, DataStoreError, DataStoreUnavailableError } from './data-store-errors';

export interface DynamoDbSettings {
  /** Custom endpoint (dynalite, DynamoDB Local); unset means the regional AWS endpoint. */
  readonly endpoint?: string;
  readonly region: string;
  /** Longest a TCP connection attempt may take. */
  readonly connectTimeoutMs: number;
  /** Longest one attempt (one HTTP request to DynamoDB) may take before it is abandoned and retried. */
  readonly requestTimeoutMs: number;
  /** Attempts per call, first one included (SDK standard retry with backoff). */
  readonly maxAttempts: number;
  /** The bound of one repository call, retries included: the settings above must fit it (callBoundMs). */
  readonly deadlineMs: number;
}

/**
 * The SDK standard retry strategy's longest wait before retry i (0-based): a random fraction of
 * base × 2^i, capped at 20 s, where the base is 1 s after a throttle (the largest; 50 ms
 * otherwise). Read from @smithy/core's retry module (Retry.throttlingDelay, MAXIMUM_RETRY_DELAY).
 */
const THROTTLING_BACKOFF_BASE_MS = 1000;
const MAXIMUM_RETRY_DELAY_MS = 20_000;

/** Longest total backoff the SDK can wait between `maxAttempts` attempts. */
export const maxBackoffMs = (maxAttempts: number): number =>
  Array.from({ length: maxAttempts - 1 }, (_, retry) =>
    Math.min(THROTTLING_BACKOFF_BASE_MS * 2 ** retry, MAXIMUM_RETRY_DELAY_MS),
  ).reduce((sum, ms) => sum + ms, 0);

/**
 * Worst case of one call: every attempt runs to its request timeout (a wall-clock timer armed when
 * the request is created, so connecting is inside it; the handler destroys the request when it
 * fires) and every retry waits its longest backoff.
 */
export const callBoundMs = (settings: Pick<DynamoDbSettings, 'maxAttempts' | 'requestTimeoutMs'>): number =>
  settings.maxAttempts * settings.requestTimeoutMs + maxBackoffMs(settings.maxAttempts);

export const createDocumentClient = (settings: DynamoDbSettings, env = process.env): DynamoDBDocumentClient => {
  const client = new DynamoDBClient({
    region: settings.region,
    maxAttempts: settings.maxAttempts,
    requestHandler: new NodeHttpHandler({
      connectionTimeout: settings.connectTimeoutMs,
      requestTimeout: settings.requestTimeoutMs,
      // Without this the handler only logs a warning when requestTimeout passes and keeps waiting.
      throwOnRequestTimeout: true,
    }),
    ...(settings.endpoint
      ? {
          endpoint: settings.endpoint,
          // An embedded DynamoDB accepts any credentials; don't make developers configure some.
          ...(env.AWS_ACCESS_KEY_ID ? {} : { credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }),
        }
      : {}),
  });
  return DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
};

const UNAVAILABLE_ERROR_NAMES = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'InternalServerError',
  'ServiceUnavailable',
  'TimeoutError',
  'AbortError',
  'RequestTimeout',
  'RequestTimeoutException',
]);
const UNAVAILABLE_ERROR_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

interface SdkErrorLike {
  name?: string;
  code?: string;
  $metadata?: { httpStatusCode?: number };
}

export const isUnavailableError = (error: unknown): boolean => {
  if (typeof error !== 'object' || error === null) return false;
  const { name, code, $metadata } = error as SdkErrorLike;
  return (
    (name !== undefined && UNAVAILABLE_ERROR_NAMES.has(name)) ||
    (code !== undefined && UNAVAILABLE_ERROR_CODES.has(code)) ||
    ($metadata?.httpStatusCode ?? 0) >= 500
  );
};

/** Wraps an SDK failure in a domain error; the original is kept as `cause` for the logs only. */
export const translateDynamoError = (error: unknown, operation: string, table?: string): Error => {
  const name = (error as SdkErrorLike | null)?.name ?? 'UnknownError';
  if (name === 'ConditionalCheckFailedException') {
    return new ConditionNotMetError(`DynamoDB ${operation}: condition not met`, { cause: error });
  }
  return isUnavailableError(error)
    ? new DataStoreUnavailableError(`DynamoDB ${operation} unavailable: ${name}`, { cause: error })
    : new DataStoreError(`DynamoDB ${operation} failed: ${name}`, {
        cause: error,
        operation,
        ...(table ? { table } : {}),
      });
};

type Item = Record<string, unknown>;

/** The `expires_at_epoch` DynamoDB TTL reads: `days` after `time`, in epoch seconds. */
export const expiresAtEpoch = (time: string | number, days: number): number =>
  Math.floor(new Date(time).getTime() / 1000) + days * 86_400;

/** Sends of one batch request, first included, before what is still unprocessed fails the call. */
export const BATCH_ATTEMPTS = 8;
const BATCH_WRITE_LIMIT = 25;
const BATCH_GET_LIMIT = 100;

/** A batch output's unprocessed part (UnprocessedItems, UnprocessedKeys), or undefined when it is empty. */
const unprocessed = <R extends object>(left: R | undefined): R | undefined =>
  left && Object.keys(left).length > 0 ? left : undefined;

/** Base of the repositories: every call gets the error translation; the SDK bounds its time. */
export abstract class DynamoRepository {
  constructor(
    protected readonly client: DynamoDBDocumentClient,
    protected readonly tableName: string,
  ) {}

  /**
   * Runs one SDK call, translating its failure into a domain error. No abort signal: the client's
   * request timeout and attempts bound the call (callBoundMs).
   */
  protected async run<T>(operation: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      throw translateDynamoError(error, operation, this.tableName);
    }
  }

  /** One call on this table: the input without TableName, the failure translated (`run`). */
  protected getItem(input: Omit<GetCommandInput, 'TableName'>) {
    return this.run('GetItem', () => this.client.send(new GetCommand({ ...input, TableName: this.tableName })));
  }
  protected putItem(input: Omit<PutCommandInput, 'TableName'>) {
    return this.run('PutItem', () => this.client.send(new PutCommand({ ...input, TableName: this.tableName })));
  }
  protected updateItem(input: Omit<UpdateCommandInput, 'TableName'>) {
    return this.run('UpdateItem', () => this.client.send(new UpdateCommand({ ...input, TableName: this.tableName })));
  }
  protected deleteItem(input: Omit<DeleteCommandInput, 'TableName'>) {
    return this.run('DeleteItem', () => this.client.send(new DeleteCommand({ ...input, TableName: this.tableName })));
  }
  protected queryOnce(input: Omit<QueryCommandInput, 'TableName'>) {
    return this.run('Query', () => this.client.send(new QueryCommand({ ...input, TableName: this.tableName })));
  }

  /** True once a conditional write is done; false when its condition was not met. Other failures throw. */
  protected async ifConditionMet(write: Promise<unknown>): Promise<boolean> {
    try {
      await write;
      return true;
    } catch (error) {
      if (error instanceof ConditionNotMetError) return false;
      throw error;
    }
  }

  /**
   * Items of a Query on this table, page after page, until there are no more or `max` are read;
   * `complete` is false when more were left.
   */
  protected async queryItems<T = Item>(
    input: Omit<QueryCommandInput, 'TableName'>,
    max = Number.POSITIVE_INFINITY,
  ): Promise<{ items: T[]; complete: boolean }> {
    const items: T[] = [];
    let complete = true;
    const pages = paginateQuery(
      { client: this.client, ...(Number.isFinite(max) ? { pageSize: max } : {}) },
      { ...input, TableName: this.tableName },
    );
    await this.run('Query', async () => {
      for await (const page of pages) {
        items.push(...((page.Items ?? []) as T[]));
        if (items.length >= max) {
          complete = page.LastEvaluatedKey === undefined && items.length <= max;
          break;
        }
      }
    });
    return { items: items.slice(0, max), complete };
  }

  /** Every item a Scan of this table finds: its reads grow with the table, so never on a request path. */
  protected async scanItems<T = Item>(input: Omit<ScanCommandInput, 'TableName'>): Promise<T[]> {
    const items: T[] = [];
    await this.run('Scan', async () => {
      for await (const page of paginateScan({ client: this.client }, { ...input, TableName: this.tableName })) {
        items.push(...((page.Items ?? []) as T[]));
      }
    });
    return items;
  }

  /**
   * Sends a batch request, then what DynamoDB left unprocessed, with backoff, until nothing is
   * left; `send` returns the unprocessed part. Still some after BATCH_ATTEMPTS: unavailable.
   */
  protected async untilProcessed<R extends object>(
    operation: string,
    request: R,
    send: (request: R) => Promise<R | undefined>,
  ): Promise<void> {
    let pending: R | undefined = request;
    for (let attempt = 0; pending !== undefined; attempt += 1) {
      if (attempt === BATCH_ATTEMPTS) {
        throw new DataStoreUnavailableError(`DynamoDB ${operation}: items still unprocessed`);
      }
      if (attempt > 0) await sleep(Math.min(1000, 50 * 2 ** attempt));
      const current: R = pending;
      pending = await this.run(operation, () => send(current));
    }
  }

  /**
   * Items by key, 100 to a BatchGetItem (in no particular order; keys must not repeat). What
   * DynamoDB leaves unprocessed is sent again, or with `once` handed back unread (a caller on a time budget).
   */
  protected async batchGet<T = Item>(
    keys: readonly Item[],
    options: { projection?: string; consistent?: boolean; once?: boolean } = {},
  ): Promise<{ items: T[]; unprocessed: Item[] }> {
    const items: T[] = [];
    const left: Item[] = [];
    for (let i = 0; i < keys.length; i += BATCH_GET_LIMIT) {
      const request: BatchGetCommandInput['RequestItems'] = {
        [this.tableName]: {
          Keys: keys.slice(i, i + BATCH_GET_LIMIT),
          ProjectionExpression: options.projection,
          ConsistentRead: options.consistent,
        },
      };
      await this.untilProcessed('BatchGetItem', request, async (RequestItems) => {
        const output = await this.client.send(new BatchGetCommand({ RequestItems }));
        items.push(...((output.Responses?.[this.tableName] ?? []) as T[]));
        if (!options.once) return unprocessed(output.UnprocessedKeys);
        left.push(...(output.UnprocessedKeys?.[this.tableName]?.Keys ?? []));
        return undefined;
      });
    }
    return { items, unprocessed: left };
  }

  /** Puts items 25 to a BatchWriteItem. */
  protected async batchPut(items: readonly Item[]): Promise<void> {
    for (let i = 0; i < items.length; i += BATCH_WRITE_LIMIT) {
      const puts: BatchWriteCommandInput['RequestItems'] = {
        [this.tableName]: items.slice(i, i + BATCH_WRITE_LIMIT).map((Item) => ({ PutRequest: { Item } })),
      };
      await this.untilProcessed('BatchWriteItem', puts, async (RequestItems) => {
        const { UnprocessedItems } = await this.client.send(new BatchWriteCommand({ RequestItems }));
        return unprocessed(UnprocessedItems);
      });
    }
  }
}
