/**
 * How a failed command ends: one line on stderr (escaped), or with --json the object
 * `{"error":{"code","message","field"?}}`, and a non-zero exit. Codes are stable: the operator
 * library's (lib/operator/errors.ts) and the few below.
 */
import { CommanderError } from 'commander';
import { messageNaming, OperatorError, type OperatorErrorCode, type OperatorField } from '../../lib/operator/errors';
import { terminal, terminalSafeJson } from '../../lib/operator/terminal';
import { dataStoreFailureMessage } from '../../lib/operator/data-store-failure';
import { DataStoreError, DataStoreUnavailableError } from '../../shared/data/data-store-errors';

/**
 * The library's codes and the CLI's: `usage_error` (the command line itself), `config_error` (no
 * target, a setting that does not parse), `unavailable` / `data_store_error` (DynamoDB silent / refusing).
 */
type CliErrorCode =
  OperatorErrorCode | 'usage_error' | 'config_error' | 'unavailable' | 'data_store_error' | 'internal_error';

interface Failure {
  code: CliErrorCode;
  message: string;
  field?: string;
}

/** The option that gives each data field; a failure names the option, as the user typed it. */
const OPTION_OF_FIELD: Partial<Record<OperatorField, string>> = {
  name: '--name',
  scopes: '--scopes',
  expires_at: '--expires',
  allowed_ips: '--allow-ip',
  rate_limit: '--rate-limit',
  grace: '--grace',
  since: '--since',
  until: '--until',
  by: '--by',
  limit: '--limit',
  from_line: '--from-line',
};

/** The failure's `field` in JSON: the option's name (`allow_ip`), or the field where no option gives it. */
const fieldOfFailure = (field: OperatorField): string =>
  OPTION_OF_FIELD[field]?.replace(/^--/, '').replaceAll('-', '_') ?? field;

const describeFailure = async (error: unknown): Promise<Failure> => {
  if (error instanceof OperatorError) {
    const message = messageNaming(error, (field) => OPTION_OF_FIELD[field]);
    return { code: error.code, message, ...(error.field ? { field: fieldOfFailure(error.field) } : {}) };
  }
  if (error instanceof CommanderError) {
    const message =
      error.code === 'commander.help' ? 'a command is missing (run with --help for usage)' : error.message;
    return { code: 'usage_error', message: message.replace(/^error: /, '') };
  }
  // Loaded here, not for every command: a ConfigError comes from this module, loaded already.
  const { ConfigError, readRegion } = await import('../../shared/config/env');
  if (error instanceof ConfigError) return { code: 'config_error', message: error.message };
  if (error instanceof DataStoreError || error instanceof DataStoreUnavailableError) {
    const { operatorTableNames } = await import('../../lib/operator/context');
    const target = {
      tables: operatorTableNames(process.env),
      endpoint: process.env.DYNAMODB_ENDPOINT?.trim(),
      region: readRegion(process.env),
    };
    return {
      code: error instanceof DataStoreError ? 'data_store_error' : 'unavailable',
      message: dataStoreFailureMessage(error, target),
    };
  }
  return { code: 'internal_error', message: error instanceof Error ? error.message : String(error) };
};

/** Writes the failure (commander has written its own, unless JSON errors were asked for) and sets the exit code. */
export const reportFailure = async (error: unknown, jsonErrors: boolean): Promise<void> => {
  if (error instanceof CommanderError) {
    if (error.exitCode === 0 || !jsonErrors) return;
  } else {
    process.exitCode = 1;
  }
  const failure = await describeFailure(error);
  process.stderr.write(
    jsonErrors ? `${terminalSafeJson({ error: failure }, 0)}\n` : `${terminal`error: ${failure.message}`}\n`,
  );
};
