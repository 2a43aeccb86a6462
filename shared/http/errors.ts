/**
 * The errors a caller can see. Middlewares and handlers throw these; the error-handler
 * middleware is the one place that turns any error into a response.
 */
import type { ErrorCode, Scope } from '../schemas';

export const AUTH_REALM = 'branch-api';

export class ApiError extends Error {
  override name = 'ApiError';
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }
}

const challenge = (extra = ''): Record<string, string> => ({
  'WWW-Authenticate': `Bearer realm="${AUTH_REALM}"${extra}`,
});
const invalidToken = challenge(', error="invalid_token"');

export const missingApiKey = () =>
  new ApiError(401, 'missing_api_key', 'Send your API key as "Authorization: Bearer wsk_...".', challenge());
export const invalidApiKey = () => new ApiError(401, 'invalid_api_key', 'The API key is not valid.', invalidToken);
export const expiredApiKey = () => new ApiError(401, 'expired_api_key', 'The API key has expired.', invalidToken);
export const revokedApiKey = () => new ApiError(401, 'revoked_api_key', 'The API key has been revoked.', invalidToken);
export const insufficientScope = (scope: Scope) =>
  new ApiError(403, 'insufficient_scope', `The API key lacks the "${scope}" scope this endpoint requires.`, {
    'WWW-Authenticate': `Bearer realm="${AUTH_REALM}", error="insufficient_scope", scope="${scope}"`,
  });
export const invalidRequest = (message: string) => new ApiError(400, 'invalid_request', message);
export const notFound = (message = 'No such resource.') => new ApiError(404, 'not_found', message);
export const methodNotAllowed = (allow: string) =>
  new ApiError(405, 'method_not_allowed', `This path only accepts ${allow}.`, { Allow: allow });
export const serviceUnavailable = (retryAfterSeconds: number) =>
  new ApiError(503, 'service_unavailable', 'The service is temporarily unavailable. Retry shortly.', {
    'Retry-After': String(retryAfterSeconds),
  });
export const internalError = () => new ApiError(500, 'internal_error', 'Something went wrong on our side.');
