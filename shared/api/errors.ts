/**
 * Every error a caller can see, in one catalogue: status, code, default message, the headers it
 * carries and when it happens. The error factories below, the OpenAPI error responses
 * (lib/openapi/document.ts) and the README error table (scripts/openapi.ts writes it) are all
 * derived from it; test/error-catalogue.test.ts proves the three agree. Adding a code means
 * adding an entry here (and a factory when it needs arguments).
 *
 * Errors follow the http-errors contract (`statusCode`, `expose`, `headers`): the chain's error
 * mapper (shared/api/middlewares/error-mapper.ts) turns them into the JSON body and
 * `@middy/http-error-handler` writes the response.
 */
import type { Scope } from '../domain/schemas';
import { MAX_REQUEST_HEADER_BYTES } from './http/request-limits';

/** 10240 → "10,240". Not toLocaleString('en'): at module load it would load ICU's locale data. */
const withThousands = (value: number): string => String(value).replace(/\B(?=(\d{3})+$)/g, ',');

export const AUTH_REALM = 'branch-api';

/** Response headers an error may carry beyond the ones every response has. */
export type ErrorHeaderName = 'WWW-Authenticate' | 'Allow' | 'Retry-After' | 'RateLimit' | 'RateLimit-Policy';

/**
 * Which operations can answer with a code: `every` authenticated operation, those that take query
 * parameters (`list`), those that read one resource (`single`), requests no route matched
 * (`unmatched`, answered by the catch-all function), any request the gateway refuses before
 * routing it (`gateway`), and the secret scanning report (`report`). `unmatched` and `gateway`
 * are answered before any key is read.
 */
export type ErrorScope = 'every' | 'list' | 'single' | 'unmatched' | 'gateway' | 'report';

export interface CatalogueEntry {
  readonly status: number;
  readonly message: string;
  /** When a caller gets it: the README table and the OpenAPI descriptions. */
  readonly when: string;
  readonly headers: readonly ErrorHeaderName[];
  readonly scope: readonly ErrorScope[];
}

export const ERROR_CATALOGUE = {
  missing_api_key: {
    status: 401,
    message: 'Send your API key as "Authorization: Bearer wsk_...".',
    when: 'no `Authorization` header, or not `Bearer <token>`',
    headers: ['WWW-Authenticate'],
    scope: ['every'],
  },
  invalid_api_key: {
    status: 401,
    message: 'The API key is not valid.',
    when: 'malformed, wrong prefix, bad checksum, or unknown key',
    headers: ['WWW-Authenticate'],
    scope: ['every'],
  },
  expired_api_key: {
    status: 401,
    message: 'The API key has expired.',
    when: "the key's expiry time has passed",
    headers: ['WWW-Authenticate'],
    scope: ['every'],
  },
  revoked_api_key: {
    status: 401,
    message: 'The API key has been revoked.',
    when: 'the key was revoked',
    headers: ['WWW-Authenticate'],
    scope: ['every'],
  },
  disabled_api_key: {
    status: 401,
    message: 'The API key is disabled. An operator of the branch can enable it again.',
    when: 'the key was disabled (`keys disable`); it answers this until it is enabled',
    headers: ['WWW-Authenticate'],
    scope: ['every'],
  },
  invalid_signature: {
    status: 401,
    message: 'The report signature does not verify.',
    when: 'a secret-scanning report whose signature is missing, does not verify, or names an unknown key',
    // Not a bearer token problem: no WWW-Authenticate (docs/decisions.md "Leaked keys").
    headers: [],
    scope: ['report'],
  },
  payload_too_large: {
    status: 413,
    message: 'The report is larger than 1 MB.',
    when: 'a secret-scanning report over 1 MB',
    headers: [],
    scope: ['report'],
  },
  insufficient_scope: {
    status: 403,
    message: 'The API key lacks the scope this endpoint requires.',
    when: 'valid key without the scope the operation requires (`read`)',
    headers: ['WWW-Authenticate'],
    scope: ['every'],
  },
  ip_not_allowed: {
    status: 403,
    message: 'The API key does not accept calls from this IP address.',
    when: "the key has an IP allowlist and the caller's address is not on it",
    // No WWW-Authenticate: the key is fine, another token would not help (docs/decisions.md "Key lifecycle").
    headers: [],
    scope: ['every'],
  },
  invalid_request: {
    status: 400,
    message: 'The request is not valid.',
    when: 'bad query parameter or cursor; a secret-scanning report that is not a JSON array of `{token, type, url, source}`',
    headers: [],
    scope: ['list', 'report'],
  },
  not_found: {
    status: 404,
    message: 'No such resource.',
    when: 'unknown resource (another branch and inactive answer the same), or no endpoint at this path',
    headers: [],
    scope: ['single', 'unmatched'],
  },
  method_not_allowed: {
    status: 405,
    message: 'This path does not accept this method.',
    when: 'a known path with a method other than GET (`Allow` lists the accepted ones)',
    headers: ['Allow'],
    scope: ['unmatched'],
  },
  rate_limited: {
    status: 429,
    message: 'Too many calls with this API key. Retry after the window resets.',
    when: "the key's rate limit is used up for this window (`Retry-After` says when it resets)",
    headers: ['Retry-After', 'RateLimit', 'RateLimit-Policy'],
    scope: ['every'],
  },
  headers_too_large: {
    status: 431,
    message: `The request line and headers exceed ${MAX_REQUEST_HEADER_BYTES} bytes. An API key is short: check the Authorization header.`,
    when: `request line and headers over ${withThousands(MAX_REQUEST_HEADER_BYTES)} bytes (deployed, API Gateway answers in its own shape)`,
    headers: [],
    scope: ['gateway'],
  },
  service_unavailable: {
    status: 503,
    message: 'The service is temporarily unavailable. Retry shortly.',
    when: 'the database is unreachable or throttling (`Retry-After` says when to retry)',
    headers: ['Retry-After'],
    scope: ['every', 'report'],
  },
  internal_error: {
    status: 500,
    message: 'Something went wrong on our side.',
    when: 'anything else; quote the request id when reporting it',
    headers: [],
    scope: ['every', 'unmatched', 'report'],
  },
} as const satisfies Record<string, CatalogueEntry>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;
export const ERROR_CODES = Object.keys(ERROR_CATALOGUE) as [ErrorCode, ...ErrorCode[]];

/** An error a caller sees: a catalogue code, a message, and the headers the catalogue names. */
export class ApiError extends Error {
  override name = 'ApiError';
  readonly statusCode: number;
  /** Always shown to the caller (http-errors contract); 5xx messages are generic by design. */
  readonly expose = true;
  constructor(
    readonly code: ErrorCode,
    message: string = ERROR_CATALOGUE[code].message,
    readonly headers: Readonly<Partial<Record<ErrorHeaderName, string>>> = {},
  ) {
    super(message);
    this.statusCode = ERROR_CATALOGUE[code].status;
  }
}

/** The JSON body of an error response: `{"error":{"code","message","request_id"}}`. */
export const errorBody = (error: ApiError, requestId: string) => ({
  error: { code: error.code, message: error.message, request_id: requestId },
});

const bearer = (params = ''): string => `Bearer realm="${AUTH_REALM}"${params}`;
const invalidToken = { 'WWW-Authenticate': bearer(', error="invalid_token"') };

export const missingApiKey = () => new ApiError('missing_api_key', undefined, { 'WWW-Authenticate': bearer() });
export const invalidApiKey = () => new ApiError('invalid_api_key', undefined, invalidToken);
export const expiredApiKey = () => new ApiError('expired_api_key', undefined, invalidToken);
export const revokedApiKey = () => new ApiError('revoked_api_key', undefined, invalidToken);
export const disabledApiKey = () => new ApiError('disabled_api_key', undefined, invalidToken);
export const insufficientScope = (scope: Scope) =>
  new ApiError('insufficient_scope', `The API key lacks the "${scope}" scope this endpoint requires.`, {
    'WWW-Authenticate': bearer(`, error="insufficient_scope", scope="${scope}"`),
  });
export const ipNotAllowed = () => new ApiError('ip_not_allowed');
export const invalidRequest = (message?: string) => new ApiError('invalid_request', message);
export const invalidSignature = () => new ApiError('invalid_signature');
export const payloadTooLarge = () => new ApiError('payload_too_large');
export const notFound = (message?: string) => new ApiError('not_found', message);
export const methodNotAllowed = (allow: string) =>
  new ApiError('method_not_allowed', `This path only accepts ${allow}.`, { Allow: allow });
export const serviceUnavailable = (retryAfterSeconds: number) =>
  new ApiError('service_unavailable', undefined, { 'Retry-After': String(retryAfterSeconds) });
/** @param fields the key's `RateLimit-Policy` and `RateLimit` (shared/api/middlewares/rate-limit.ts) */
export const rateLimited = (retryAfterSeconds: number, fields: Record<'RateLimit-Policy' | 'RateLimit', string>) =>
  new ApiError('rate_limited', undefined, { 'Retry-After': String(retryAfterSeconds), ...fields });
export const internalError = () => new ApiError('internal_error');
export const headersTooLarge = () => new ApiError('headers_too_large');
