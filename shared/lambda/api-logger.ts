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
import { invocationStore, invocationsKeptApart } from './invocation-scope';

export class ApiLogger extends Logger {
  /** A level at or below DEBUG has been in effect, at start or set since (debug sampling, a test). Never unset: with invocations at once, one may still be at it. */
  #debugSeen: boolean;

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
   * Where invocations keep their values apart (shared/lambda/invocation-scope.ts), or have in this
   * environment, the context is set at once, as Powertools does; elsewhere it waits for a line.
   */
  override addContext(context: Context): void {
    if (invocationStore() !== undefined || invocationsKeptApart()) {
      this.#pending = undefined;
      super.addContext(context);
      return;
    }
    // Taken now, as Powertools would: the request that was the cold start stays the one marked so.
    this.#pending = { context, coldStart: this.getColdStart() };
  }

  protected override processLogItem(logLevel: number, input: LogItemMessage, extraInput: LogItemExtraInput): void {
    // Also called while Powertools' constructor runs (its sampling notice), before this class's members exist.
    if (#pending in this) this.#handOver();
    super.processLogItem(logLevel, input, extraInput);
  }

  /** A child starts from the parent's Lambda context, so it gets the one held. */
  override createChild(options?: ConstructorOptions): Logger {
    this.#handOver();
    return super.createChild(options);
  }

  /** Gives Powertools the context held, if any, with its cold-start flag. */
  #handOver(): void {
    const pending = this.#pending;
    if (pending === undefined) return;
    this.#pending = undefined;
    this.coldStart = pending.coldStart;
    super.addContext(pending.context);
  }
}
