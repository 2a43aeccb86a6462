/**
 * The error responses and header components of the OpenAPI document (lib/openapi/document.ts),
 * grouped from the error catalogue (shared/api/errors.ts) and the header values of shared/api/http.
 * Build-time only, like the document.
 */
import { STATUS_CODES } from 'node:http';
import { z } from 'zod';
import {
  AUTH_REALM,
  ERROR_CATALOGUE,
  ERROR_CODES,
  type CatalogueEntry,
  type ErrorCode,
  type ErrorHeaderName,
  type ErrorScope,
} from '../../shared/api/errors';
import { COMMON_HEADERS } from '../../shared/api/http/response';
import { API_KEY_EXPIRES_HEADER } from '../../shared/api/middlewares/response-headers';
import { DEFAULT_RATE_LIMIT, parseRateLimit, WINDOW_SECONDS } from '../../shared/domain/rate-limit';
import { SCOPES } from '../../shared/domain/schemas';

/** The body of every error response (docs/decisions.md "Errors"). */
/* Build-time only: zod stays out of the function bundles. */
const ErrorBodySchema = z.object({
  error: z.object({
    code: z.enum(ERROR_CODES).meta({ description: 'Stable, machine-readable error code' }),
    message: z.string().meta({ description: 'Human-readable explanation; may change, do not parse it' }),
    request_id: z.string().meta({ description: 'Same as the X-Request-Id response header' }),
  }),
});

/** The one media type of every response body; the `Content-Type` header adds `charset=utf-8`. */
const MEDIA_TYPE = 'application/json';

export type Json = Record<string, unknown>;
export const ref = (section: string, name: string) => ({ $ref: `#/components/${section}/${name}` });

/** A response's component name: its reason phrase in one word (`TooManyRequests`); 500 is `InternalError`. */
const statusName = (status: number): string =>
  status === 500 ? 'InternalError' : (STATUS_CODES[status] ?? `Status${status}`).replace(/\W/g, '');

/** The header component documenting a catalogue header on a response of this status. */
const headerComponent = (status: number, name: ErrorHeaderName): string =>
  name === 'WWW-Authenticate' || name.startsWith('RateLimit') ? `${name}-${status}` : name;

export interface ErrorResponse {
  status: number;
  /** Component name, e.g. `Unauthorized`. */
  name: string;
  codes: ErrorCode[];
  headers: ErrorHeaderName[];
  scope: ErrorScope[];
}

/**
 * Codes only the secret scanning report answers with (`invalid_signature`, `payload_too_large`) get
 * responses of their own, so the API's 401 keeps its bearer challenge required and its codes exact.
 */
const isReportOnly = (code: ErrorCode): boolean =>
  (ERROR_CATALOGUE[code].scope as readonly ErrorScope[]).every((scope) => scope === 'report');
const groupOf = (code: ErrorCode): string => `${ERROR_CATALOGUE[code].status}${isReportOnly(code) ? ' report' : ''}`;

/**
 * The error responses, one per status (and one more per status for report-only codes), grouped
 * from the catalogue (shared/api/errors.ts).
 */
export const ERROR_RESPONSES: ErrorResponse[] = [...new Set(ERROR_CODES.map(groupOf))]
  .sort((a, b) => a.localeCompare(b))
  .map((group) => {
    const codes = ERROR_CODES.filter((code) => groupOf(code) === group);
    const entries = codes.map((code): CatalogueEntry => ERROR_CATALOGUE[code]);
    const status = entries[0]!.status;
    // A status that only the report answers keeps its plain name (413 PayloadTooLarge).
    const shared = ERROR_CODES.some((code) => ERROR_CATALOGUE[code].status === status && !isReportOnly(code));
    return {
      status,
      name: `${group.endsWith(' report') && shared ? 'Report' : ''}${statusName(status)}`,
      codes,
      headers: [...new Set(entries.flatMap((entry) => entry.headers))],
      scope: [...new Set(entries.flatMap((entry) => entry.scope))],
    };
  });

export const errorSchemaFor = (codes: readonly ErrorCode[]) => {
  const error = ErrorBodySchema.shape.error;
  return ErrorBodySchema.extend({
    error: error.extend({ code: error.shape.code.extract(codes as [ErrorCode, ...ErrorCode[]]) }),
  });
};

const header = (description: string, schema: Json): Json => ({ description, required: true, schema });
const DEFAULT_POLICY = parseRateLimit(DEFAULT_RATE_LIMIT);

/**
 * The rate-limit fields (draft-ietf-httpapi-ratelimit-headers). Not required on most responses: a
 * call refused before its key is known carries none, and a revoked or expired key is counted
 * (docs/capacity.md "Per key") but its 401 carries no fields: they would advertise capacity it
 * does not have.
 */
const RATE_LIMIT_HEADERS: Record<string, Json> = {
  'RateLimit-Policy': {
    description:
      "The key's rate limit: `q` calls per window of `w` seconds. On every response to a key that is neither " +
      'revoked nor expired.',
    required: false,
    schema: {
      type: 'string',
      pattern: `^"key";q=[1-9][0-9]*;w=(${WINDOW_SECONDS.join('|')})$`,
      examples: [`"key";q=${DEFAULT_POLICY.limit};w=${DEFAULT_POLICY.windowSeconds}`],
    },
  },
  RateLimit: {
    description:
      "What is left of the key's limit: `r` calls remaining in this window, which resets in `t` seconds. On every " +
      'response to a counted key, unless the counter could not be read (the call was then admitted). For a ' +
      'limit above 500 calls per window, counted in blocks (docs/capacity.md "Per key"), `r` is an estimate when ' +
      'several servers share the key; the limit itself is never exceeded.',
    required: false,
    schema: { type: 'string', pattern: '^"key";r=[0-9]+;t=[1-9][0-9]*$', examples: ['"key";r=49;t=1'] },
  },
};

const HEADERS: Record<string, Json> = {
  'X-Request-Id': header(
    'Id of this request; the same id is in the error body (`request_id`) and in the usage record of the call.',
    { type: 'string', minLength: 1, examples: ['4f8f3c2e-8b1a-4c3e-9a57-1e2d3c4b5a69'] },
  ),
  'Cache-Control': header('Responses are never cached.', { type: 'string', const: COMMON_HEADERS['Cache-Control'] }),
  'X-Content-Type-Options': header('Browsers must not sniff the content type.', {
    type: 'string',
    const: COMMON_HEADERS['X-Content-Type-Options'],
  }),
  'WWW-Authenticate-401': header('RFC 6750 challenge; `error="invalid_token"` when a token was sent.', {
    type: 'string',
    pattern: `^Bearer realm="${AUTH_REALM}"(, error="invalid_token")?$`,
    examples: [`Bearer realm="${AUTH_REALM}", error="invalid_token"`],
  }),
  'WWW-Authenticate-403': header('RFC 6750 challenge naming the scope the operation requires (`insufficient_scope`).', {
    type: 'string',
    pattern: `^Bearer realm="${AUTH_REALM}", error="insufficient_scope", scope="(${SCOPES.join('|')})"$`,
    examples: [`Bearer realm="${AUTH_REALM}", error="insufficient_scope", scope="read"`],
  }),
  Allow: header('The methods this path accepts.', { type: 'string', minLength: 1, examples: ['GET'] }),
  'Retry-After': header('Seconds to wait before retrying.', { type: 'integer', minimum: 0, examples: [1] }),
  [API_KEY_EXPIRES_HEADER]: {
    ...header(
      'When the API key expires (ISO 8601, UTC): on every response to a key that has an expiry, once the key ' +
        'has been found, success or error (not on those answered before any key is read). A rolled key announces ' +
        'the end of its grace period here.',
      { type: 'string', format: 'date-time', examples: ['2027-01-31T23:59:59.000Z'] },
    ),
    required: false,
  },
  ...RATE_LIMIT_HEADERS,
  // Always on a 429: the same fields, required.
  ...Object.fromEntries(
    Object.entries(RATE_LIMIT_HEADERS).map(([name, definition]) => [`${name}-429`, { ...definition, required: true }]),
  ),
};

/**
 * A catalogue header is required on the response of a status only when every code of that status
 * carries it: a 403 `ip_not_allowed` has no challenge, a 403 `insufficient_scope` does.
 */
const OPTIONAL_HEADER_COMPONENTS = new Set(
  ERROR_RESPONSES.flatMap(({ status, codes, headers }) =>
    headers
      .filter((name) => !codes.every((code) => (ERROR_CATALOGUE[code].headers as readonly string[]).includes(name)))
      .map((name) => headerComponent(status, name)),
  ),
);

export const headerComponents = (): Record<string, Json> =>
  Object.fromEntries(
    Object.entries(HEADERS).map(([name, component]) => [
      name,
      OPTIONAL_HEADER_COMPONENTS.has(name) ? { ...component, required: false } : component,
    ]),
  );

/** Response header name → its component (`component` of the name). */
const headerRefs = (names: readonly string[], component = (name: string) => name): Json =>
  Object.fromEntries(names.map((name) => [name, ref('headers', component(name))]));

/** The headers every response carries, those answered before any key is read too. */
export const KEYLESS_RESPONSE_HEADERS = headerRefs(['X-Request-Id', 'Cache-Control', 'X-Content-Type-Options']);
/**
 * The headers of every response of an operation that reads a key: those, its optional expiry and
 * the rate-limit fields (docs/decisions.md "Rate limits").
 */
export const KEYED_RESPONSE_HEADERS = {
  ...KEYLESS_RESPONSE_HEADERS,
  ...headerRefs([API_KEY_EXPIRES_HEADER, 'RateLimit-Policy', 'RateLimit']),
};

export const jsonContent = (schema: string): Json => ({ [MEDIA_TYPE]: { schema: ref('schemas', schema) } });

/**
 * Scopes answered before any API key is read: by the catch-all function, by the gateway itself,
 * or by the secret scanning report (which is signed, not keyed).
 */
const KEYLESS_SCOPES: readonly ErrorScope[] = ['unmatched', 'gateway', 'report'];
const isKeyless = (scope: ErrorScope): boolean => KEYLESS_SCOPES.includes(scope);

/** The headers only a response to a found key carries; absent from every response answered before a key is read. */
export const KEY_HEADERS = ['RateLimit-Policy', 'RateLimit', API_KEY_EXPIRES_HEADER] as const;

/**
 * The component of a status's response answered before any key is read: the status's own name when
 * no operation that reads a key answers with it (405, 431), else `<name>WithoutKey` (404, 500).
 */
export const keylessResponseName = ({ name, scope }: ErrorResponse): string =>
  scope.every(isKeyless) ? name : `${name}WithoutKey`;

/** Status → the keyless response of each status answered in one of `scopes` (or by the gateway). */
export const keylessResponses = (...scopes: ErrorScope[]): Json =>
  Object.fromEntries(
    ERROR_RESPONSES.filter(({ scope }) => [...scopes, 'gateway'].some((s) => scope.includes(s as ErrorScope))).map(
      (response) => [response.status, ref('responses', keylessResponseName(response))],
    ),
  );

const describeCodes = (codes: readonly ErrorCode[]): string =>
  codes.map((code) => `\`${code}\`: ${ERROR_CATALOGUE[code].when}.`).join(' ');

const catalogueHeaders = (status: number, headers: readonly ErrorHeaderName[]): Json =>
  headerRefs(headers, (header) => headerComponent(status, header as ErrorHeaderName));

const keyedResponse = ({ status, name, codes, headers }: ErrorResponse): Json => ({
  description: describeCodes(codes),
  headers: { ...KEYED_RESPONSE_HEADERS, ...catalogueHeaders(status, headers) },
  content: jsonContent(`${name}Error`),
});

const keylessResponse = ({ status, name, codes }: ErrorResponse): Json => {
  const own = codes.filter((code) => ERROR_CATALOGUE[code].scope.some(isKeyless));
  return {
    description:
      `Answered before any key is read, whatever \`Authorization\` says: never carries ${KEY_HEADERS.map((header) => `\`${header}\``).join(', ')}. ` +
      describeCodes(own),
    headers: {
      ...KEYLESS_RESPONSE_HEADERS,
      ...catalogueHeaders(status, [...new Set(own.flatMap((code) => ERROR_CATALOGUE[code].headers))]),
    },
    'x-absent-headers': [...KEY_HEADERS],
    content: jsonContent(`${name}Error`),
  };
};

/** Per status: the response of operations that read a key, and the one answered before a key is read. */
export const buildErrorResponses = (): Record<string, Json> =>
  Object.fromEntries(
    ERROR_RESPONSES.flatMap((response) => [
      ...(response.scope.some((scope) => !isKeyless(scope)) ? [[response.name, keyedResponse(response)]] : []),
      ...(response.scope.some(isKeyless) ? [[keylessResponseName(response), keylessResponse(response)]] : []),
    ]),
  );
