/**
 * One instance of every catalogue error, built by its factory. Typed by the catalogue, so a new
 * code without an entry here fails the typecheck.
 */
import {
  disabledApiKey,
  expiredApiKey,
  headersTooLarge,
  insufficientScope,
  ipNotAllowed,
  internalError,
  invalidApiKey,
  invalidRequest,
  invalidSignature,
  methodNotAllowed,
  missingApiKey,
  notFound,
  payloadTooLarge,
  rateLimited,
  revokedApiKey,
  serviceUnavailable,
  type ApiError,
  type ErrorCode,
} from '../../shared/api/errors';

export const ERROR_EXAMPLES: Record<ErrorCode, () => ApiError> = {
  missing_api_key: missingApiKey,
  invalid_api_key: invalidApiKey,
  expired_api_key: expiredApiKey,
  revoked_api_key: revokedApiKey,
  disabled_api_key: disabledApiKey,
  invalid_signature: invalidSignature,
  payload_too_large: payloadTooLarge,
  insufficient_scope: () => insufficientScope('read'),
  ip_not_allowed: ipNotAllowed,
  invalid_request: () => invalidRequest('limit must be a whole number from 1 to 100.'),
  not_found: () => notFound(),
  method_not_allowed: () => methodNotAllowed('GET'),
  rate_limited: () => rateLimited(1, { 'RateLimit-Policy': '"key";q=50;w=1', RateLimit: '"key";r=0;t=1' }),
  service_unavailable: () => serviceUnavailable(1),
  internal_error: internalError,
  headers_too_large: headersTooLarge,
};
