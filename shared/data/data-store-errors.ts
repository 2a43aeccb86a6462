/**
 * Domain errors of the data layer, in a module of their own with no SDK import: the error
 * mapping imports them, and the catch-all function (which reads no table) must not bundle the
 * DynamoDB client through it.
 */

/** The database could not answer in time (unreachable, throttling, stalled): worth a retry. */
export class DataStoreUnavailableError extends Error {
  override name = 'DataStoreUnavailableError';
  readonly retryAfterSeconds = 1;
}

/** Any other database failure (misconfiguration, validation): a bug or an ops problem. */
export class DataStoreError extends Error {
  override name = 'DataStoreError';
  /** The table of the request that failed, when known: the operator's messages name it. */
  readonly table?: string;
  /** The DynamoDB operation that failed (`PutItem`), when known. */
  readonly operation?: string;

  constructor(message: string, options?: ErrorOptions & { table?: string; operation?: string }) {
    super(message, options);
    if (options?.table !== undefined) this.table = options.table;
    if (options?.operation !== undefined) this.operation = options.operation;
  }
}

/**
 * A conditional write found the item not as it expected (ConditionalCheckFailedException). Each
 * repository turns it into what it means for its own items, so no caller inspects SDK errors.
 */
export class ConditionNotMetError extends DataStoreError {
  override name = 'ConditionNotMetError';
}
