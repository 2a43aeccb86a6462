/** Bad operator input (or a refused operation): a one-line message for a person, no stack. */
export class OperatorError extends Error {
  override name = 'OperatorError';
}
