/**
 * The DynamoDB document client and the translation of SDK failures into domain errors.
 * Every call is bounded by the SDK itself: attempts × request timeout + the retry backoff
 * (docs/reliability.md "Deadlines"), so a request can never hang and no attempt outlives it.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  BatchWriteCommand,
  DynamoDBDocumentClient,
  QueryCommand,
  type BatchWriteCommandOutput,
  type QueryCommandInput,
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
export const maxBackoffMs = (maxAttempts: number): number => {
  let total = 0;
  for (let retry = 0; retry < maxAttempts - 1; retry += 1) {
    total += Math.min(THROTTLING_BACKOFF_BASE_MS * 2 ** retry, MAXIMUM_RETRY_DELAY_MS);
  }
  return total;
};

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
export const translateDynamoError = (error: unknown, operation: string): Error => {
  const name = (error as SdkErrorLike | null)?.name ?? 'UnknownError';
  if (name === 'ConditionalCheckFailedException') {
    return new ConditionNotMetError(`DynamoDB ${operation}: condition not met`, { cause: error });
  }
  return isUnavailableError(error)
    ? new DataStoreUnavailableError(`DynamoDB ${operation} unavailable: ${name}`, { cause: error })
    : new DataStoreError(`DynamoDB ${operation} failed: ${name}`, { cause: error });
};

/** Base of the repositories: every call gets the error translation; the SDK bounds its time. */
export abstract class DynamoRepository {
  constructor(
    protected readonly client: DynamoDBDocumentClient,
    protected readonly tableName: string,
  ) {}

  /**
   * Runs one SDK call, translating its failure into a domain error. No abort signal: the client's
   * request timeout and attempts bound the call (callBoundMs), and the handler destroys a timed-out
   * attempt, so nothing goes on in the background. A signal per call cost 6–13 µs
   * (docs/performance.md). Not an async function: the call's own promise is the result, one
   * promise and microtask fewer per call; the reads every request makes (the key, the branch's
   * data, the counter, the usage record) chain on it the same way rather than await it. `read`,
   * when given, turns the output into the result in the same step as the translation: one promise
   * and resumption fewer per call than a `.then` after it (docs/performance.md "Where the µs go").
   * An error `read` throws is not translated, as one thrown by a later `.then` would not be.
   */
  protected run<T>(operation: string, call: () => Promise<T>): Promise<T>;
  protected run<T, R>(operation: string, call: () => Promise<T>, read: (output: T) => R): Promise<R>;
  protected run<T, R>(operation: string, call: () => Promise<T>, read?: (output: T) => R): Promise<T | R> {
    const translate = (error: unknown): Promise<never> => Promise.reject(translateDynamoError(error, operation));
    try {
      return call().then(read, translate);
    } catch (error) {
      return translate(error);
    }
  }

  /** Items of a Query on this table, page after page, until there are no more or `limit` is reached. */
  protected async queryItems<T>(input: Omit<QueryCommandInput, 'TableName'>, limit = Infinity): Promise<T[]> {
    const items: T[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const remaining = limit - items.length;
      const page = await this.run('Query', () =>
        this.client.send(
          new QueryCommand({
            ...input,
            TableName: this.tableName,
            ...(Number.isFinite(remaining) ? { Limit: remaining } : {}),
            ExclusiveStartKey: startKey,
          }),
        ),
      );
      items.push(...((page.Items ?? []) as T[]));
      startKey = page.LastEvaluatedKey;
    } while (startKey && items.length < limit);
    return items.slice(0, limit);
  }

  /** Puts items 25 to a BatchWriteItem, retrying (with backoff) what DynamoDB leaves unprocessed. */
  protected async batchPut(items: readonly Record<string, unknown>[]): Promise<void> {
    const BATCH_WRITE_LIMIT = 25;
    for (let i = 0; i < items.length; i += BATCH_WRITE_LIMIT) {
      let pending: BatchWriteCommand['input']['RequestItems'] = {
        [this.tableName]: items.slice(i, i + BATCH_WRITE_LIMIT).map((Item) => ({ PutRequest: { Item } })),
      };
      for (let attempt = 0; pending && Object.keys(pending).length > 0; attempt += 1) {
        if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(1000, 50 * 2 ** attempt)));
        const requestItems: BatchWriteCommand['input']['RequestItems'] = pending;
        const result: BatchWriteCommandOutput = await this.run('BatchWriteItem', () =>
          this.client.send(new BatchWriteCommand({ RequestItems: requestItems })),
        );
        pending = result.UnprocessedItems;
      }
    }
  }
}
