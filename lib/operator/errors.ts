/**
 * Operator errors by code (docs/decisions.md "Operator errors"): the CLI and the console map an
 * error by its `code` (and show it next to `field`), never by its message text.
 */
export const OPERATOR_ERROR_CODES = [
  /** Bad input; `field` names the option or form field when there is one. */
  'invalid_input',
  'unknown_branch',
  /** No key of this id in this branch (another branch's key answers the same). */
  'unknown_key',
  /** The key's state forbids the action (revoked, expired, disabled, rolled). */
  'key_not_changeable',
  /** Another action changed the key at the same moment; nothing was written. */
  'conflict',
] as const;
export type OperatorErrorCode = (typeof OPERATOR_ERROR_CODES)[number];

/** Bad operator input (or a refused operation): a one-line message for a person, no stack. */
export class OperatorError extends Error {
  override name = 'OperatorError';
  constructor(
    message: string,
    readonly code: OperatorErrorCode = 'invalid_input',
    /** The input it is about: `scopes`, `expires`, `name`, `allow_ip`, `rate_limit`, … */
    readonly field?: string,
  ) {
    super(message);
  }
}

/** Bad input for one field. */
export const invalidInput = (field: string, message: string): OperatorError =>
  new OperatorError(message, 'invalid_input', field);

/** The field an option is about: `--allow-ip` → `allow_ip`. */
export const fieldOfOption = (option: string): string => option.replace(/^--/, '').replaceAll('-', '_');
