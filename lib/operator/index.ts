/**
 * The operator library in one import, for the settings console and scripts: key actions, key
 * state, activity, usage, and errors by code. Each function's own module says more.
 */
export { createOperatorContext, type OperatorContext } from './context';
export {
  createKey,
  keyStatus,
  listKeyPage,
  listKeys,
  readUsage,
  requireKeyOfBranch,
  revokeKey,
  seed,
  type KeyListing,
  type UsageSummary,
} from './operations';
export { auditKeys, rollKey } from './lifecycle';
export {
  disableKey,
  enableKey,
  listActivity,
  MAX_ACTIVITY_LIMIT,
  updateKey,
  type ActivityRequest,
  type KeyActionOutcome,
  type UpdateKeyRequest,
} from './key-actions';
export { OPERATOR_ERROR_CODES, OperatorError, type OperatorErrorCode } from './errors';
export { isUsable, KEY_STATES, keyState, msUntilExpiry, type KeyState } from '../../shared/domain/key-state';
export { KEY_ACTIONS, type ActivityEntry, type KeyAction } from '../../shared/domain/key-activity';
