/**
 * Powertools' logger, with two costs of a request that logs nothing taken out (docs/performance.md
 * "Where the µs go"). Each get or set of Powertools' per-invocation values reads the environment
 * (AWS_LAMBDA_MAX_CONCURRENCY), about 3 µs in place for the first read of a request:
 * - the "Usage recorded" check asks `mayLogDebug` before it reads the level;
 * - the Lambda context a request gives `addContext` is handed to Powertools when the first line
 *   after it is logged, where Powertools keeps one context for the whole environment (one
 *   invocation at a time, as standard Lambda runs them). Lines carry exactly what they carried.
 */
import { Logger, LogLevelThreshold } from '@aws-lambda-powertools/logger';
import type {
  ConstructorOptions,
  LogItemExtraInput,
  LogItemMessage,
  LogLevel,
} from '@aws-lambda-powertools/logger/types';
import type { Context } from 'aws-lambda';

/** The Lambda runtime's store of the invocation being handled (@aws/lambda-invoke-store), when there is one. */
const invokeStore = (): { hasContext(): boolean } | undefined =>
  (globalThis as { awslambda?: { InvokeStore?: { hasContext(): boolean } } }).awslambda?.InvokeStore;

export class ApiLogger extends Logger {
  /** A level at or below DEBUG has been in effect, at start or set since (debug sampling, a test). Never unset: with invocations at once, one may still be at it. */
  #debugSeen: boolean;

  /**
   * Whether Powertools keeps the Lambda context per invocation (AWS_LAMBDA_MAX_CONCURRENCY is set:
   * Lambda Managed Instances, the local gateway). Read at the first request handled inside an
   * invocation store, then fixed: the runtime sets it before any code runs, lib/local/invoke.ts
   * before its first invocation.
   */
  #perInvocation: boolean | undefined;

  /** The request's Lambda context not yet handed to Powertools, with its cold-start flag as of then. */
  #pending: { context: Context; coldStart: boolean } | undefined;

  constructor(options?: ConstructorOptions) {
    super(options);
    this.#debugSeen = this.level <= LogLevelThreshold.DEBUG;
  }

  override setLogLevel(logLevel: LogLevel): void {
    super.setLogLevel(logLevel);
    // Also called while Powertools' constructor runs (debug sampling at start), before this class's field exists.
    if (#debugSeen in this && !this.#debugSeen) this.#debugSeen = this.level <= LogLevelThreshold.DEBUG;
  }

  /** False while no invocation of this container can log at debug; true, the level says. */
  get mayLogDebug(): boolean {
    return this.#debugSeen;
  }

  /**
   * Where Powertools keeps a context per invocation (only inside an invocation store, with the
   * variable set) the context is set at once, as Powertools does; elsewhere it waits for a line.
   */
  override addContext(context: Context): void {
    if (invokeStore()?.hasContext() && (this.#perInvocation ??= !!process.env.AWS_LAMBDA_MAX_CONCURRENCY)) {
      this.#pending = undefined;
      super.addContext(context);
      return;
    }
    // Taken now, as Powertools would: the request that was the cold start stays the one marked so.
    this.#pending = { context, coldStart: this.getColdStart() };
  }

  protected override processLogItem(logLevel: number, input: LogItemMessage, extraInput: LogItemExtraInput): void {
    // Also called while Powertools' constructor runs (its sampling notice), before this class's fields exist.
    const pending = #pending in this ? this.#pending : undefined;
    if (pending !== undefined) {
      this.#pending = undefined;
      this.coldStart = pending.coldStart;
      super.addContext(pending.context);
    }
    super.processLogItem(logLevel, input, extraInput);
  }
}
