/**
 * The DynamoDB document client and the translation of SDK failures into domain errors.
 * Timeouts, attempts and a per-call deadline are bounded so a request can never hang.
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
  /** Hard deadline for one repository call, retries included. */
  readonly deadlineMs: number;
}

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

/** The abort reason of a call past its deadline, as AbortSignal.timeout() gives. */
const DEADLINE_MESSAGE = 'The operation was aborted due to timeout';

/** Base of the repositories: every call gets the deadline and the error translation. */
export abstract class DynamoRepository {
  constructor(
    protected readonly client: DynamoDBDocumentClient,
    protected readonly tableName: string,
    private readonly deadlineMs = 2000,
  ) {}

  /**
   * Runs one SDK call under the deadline, translating its failure into a domain error. The
   * deadline is a timer cleared as soon as the call settles, not AbortSignal.timeout(): that one
   * stays armed after the call, and when it fires builds a DOMException and dispatches an abort
   * event for every call ever made (docs/performance.md). The abort reason is the same.
   */
  protected async run<T>(operation: string, call: (abortSignal: AbortSignal) => Promise<T>): Promise<T> {
    const controller = new AbortController();
    const deadline = setTimeout(
      () => controller.abort(new DOMException(DEADLINE_MESSAGE, 'TimeoutError')),
      this.deadlineMs,
    );
    try {
      return await call(controller.signal);
    } catch (error) {
      throw translateDynamoError(error, operation);
    } finally {
      clearTimeout(deadline);
    }
  }

  /** Items of a Query on this table, page after page, until there are no more or `limit` is reached. */
  protected async queryItems<T>(input: Omit<QueryCommandInput, 'TableName'>, limit = Infinity): Promise<T[]> {
    const items: T[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const remaining = limit - items.length;
      const page = await this.run('Query', (abortSignal) =>
        this.client.send(
          new QueryCommand({
            ...input,
            TableName: this.tableName,
            ...(Number.isFinite(remaining) ? { Limit: remaining } : {}),
            ExclusiveStartKey: startKey,
          }),
          { abortSignal },
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
        const result: BatchWriteCommandOutput = await this.run('BatchWriteItem', (abortSignal) =>
          this.client.send(new BatchWriteCommand({ RequestItems: requestItems }), { abortSignal }),
        );
        pending = result.UnprocessedItems;
      }
    }
  }
}
