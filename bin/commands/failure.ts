/**
 * How a failed command ends: one line on stderr (escaped), or with --json the object
 * `{"error":{"code","message","field"?}}`, and a non-zero exit. Codes are stable: the operator
 * library's (lib/operator/errors.ts) and the few below.
 */
import { CommanderError } from 'commander';
import { OperatorError, type OperatorErrorCode } from '../../lib/operator/errors';
import { terminal, terminalSafeJson } from '../../lib/operator/terminal';
import { DataStoreError, DataStoreUnavailableError } from '../../shared/data/data-store-errors';
import { ConfigError } from '../../shared/lambda/config';

/** Codes the CLI adds to the operator library's. */
export const CLI_ERROR_CODES = [
  /** The command line itself: unknown command or option, missing argument, bad option value. */
  'usage_error',
  /** No target, or a setting that does not parse. */
  'config_error',
  /** DynamoDB did not answer in time. */
  'unavailable',
  /** DynamoDB refused the request (a missing table, say). */
  'data_store_error',
  'internal_error',
] as const;
export type CliErrorCode = OperatorErrorCode | (typeof CLI_ERROR_CODES)[number];

export interface Failure {
  code: CliErrorCode;
  message: string;
  field?: string;
}

export const describeFailure = (error: unknown): Failure => {
  if (error instanceof OperatorError) {
    return { code: error.code, message: error.message, ...(error.field ? { field: error.field } : {}) };
  }
  if (error instanceof CommanderError) {
    const message =
      error.code === 'commander.help' ? 'a command is missing (run with --help for usage)' : error.message;
    return { code: 'usage_error', message: message.replace(/^error: /, '') };
  }
  if (error instanceof ConfigError) return { code: 'config_error', message: error.message };
  if (error instanceof DataStoreUnavailableError) {
    return {
      code: 'unavailable',
      message: 'DynamoDB is not reachable (is DYNAMODB_ENDPOINT right, is the local stack running?)',
    };
  }
  if (error instanceof DataStoreError) {
    return {
      code: 'data_store_error',
      message: `DynamoDB refused the request: ${error.message} (do the tables exist?)`,
    };
  }
  return { code: 'internal_error', message: error instanceof Error ? error.message : String(error) };
};

/** Writes the failure (commander has written its own, unless JSON errors were asked for) and sets the exit code. */
export const reportFailure = (error: unknown, jsonErrors: boolean): void => {
  if (error instanceof CommanderError) {
    if (error.exitCode === 0 || !jsonErrors) return;
  } else {
    process.exitCode = 1;
  }
  const failure = describeFailure(error);
  process.stderr.write(
    jsonErrors ? `${terminalSafeJson({ error: failure }, 0)}\n` : `${terminal`error: ${failure.message}`}\n`,
  );
};
