/**
 * Operator errors by code (docs/decisions.md "Operator errors"): the CLI and the console map an
 * error by its `code` and show it next to its `field`, never by its message text.
 */
export const OPERATOR_ERROR_CODES = [
  /** Bad input; `field` names the data field when there is one. */
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

/** The data an error can be about: a key's settings, the action's own inputs, and what they name. */
export type OperatorField =
  | 'name'
  | 'scopes'
  | 'expires_at'
  | 'allowed_ips'
  | 'rate_limit'
  | 'grace'
  | 'branch'
  | 'key_id'
  /** The change as a whole (an update that changes nothing). */
  | 'key'
  | 'since'
  | 'until'
  | 'by'
  | 'limit'
  /** A page's place in the activity log (the console's newer and older pages). */
  | 'position'
  | 'from_line';

/** Bad operator input (or a refused operation): a one-line message for a person, no stack. */
export class OperatorError extends Error {
  override name = 'OperatorError';
  constructor(
    message: string,
    readonly code: OperatorErrorCode = 'invalid_input',
    readonly field?: OperatorField,
    /** What follows the field's name in the message (`must be in the future`): see `messageNaming`. */
    readonly detail?: string,
  ) {
    super(message);
  }
}

/** Bad input for one field; the message is the field's name, then `detail`. */
export const invalidInput = (field: OperatorField, detail: string): OperatorError =>
  new OperatorError(`${field}${detail}`, 'invalid_input', field, detail);

/** A count asked for (`limit`), checked: a whole number from 1 to `max`. */
export const checkLimit = (limit: number, max: number): number => {
  if (!Number.isInteger(limit) || limit < 1 || limit > max) {
    throw invalidInput('limit', ` must be a whole number from 1 to ${max}`);
  }
  return limit;
};

/** A domain parser whose refusal (an error of `refusal`) becomes an invalid `field`. */
export const namingField =
  <A, T>(field: OperatorField, parse: (value: A) => T, refusal: new (message: string) => Error) =>
  (value: A): T => {
    try {
      return parse(value);
    } catch (error) {
      if (error instanceof refusal) throw invalidInput(field, `: ${error.message}`);
      throw error;
    }
  };

/**
 * The message with its field called as the reader knows it: the CLI's option (`--expires must be
 * in the future`), the console's label (`Expires must be in the future`).
 */
export const messageNaming = (error: OperatorError, nameOf: (field: OperatorField) => string | undefined): string => {
  const name = error.field && error.detail !== undefined ? nameOf(error.field) : undefined;
  return name === undefined ? error.message : `${name}${error.detail}`;
};
