/**
 * The OpenAPI 3.1 document of the API, built from the same zod schemas the code uses
 * (shared/domain/schemas.ts, via zod's own JSON Schema draft 2020-12 output, the dialect OpenAPI 3.1
 * uses), the route table (shared/api/routes.ts), the error catalogue (shared/api/errors.ts) and the header
 * values of shared/api/http. Build-time only: it lives outside shared/ so no function bundles it.
 * `npm run openapi` writes it to docs/openapi.json; a test fails when that file differs from a
 * fresh build, and every response in the test suites is validated against it.
 */
import { z } from 'zod';
import { API_KEY_LENGTH, API_KEY_PREFIX } from '../../shared/domain/api-key';
import {
  AUTH_REALM,
  ERROR_CATALOGUE,
  ERROR_CODES,
  type CatalogueEntry,
  type ErrorCode,
  type ErrorHeaderName,
  type ErrorScope,
} from '../../shared/api/errors';
import { DEFAULT_LIMIT, MAX_LIMIT } from '../../shared/api/http/pagination';
import { COMMON_HEADERS } from '../../shared/api/http/response';
import { API_KEY_EXPIRES_HEADER } from '../../shared/api/middlewares/response-headers';
import { routes, type RouteDefinition, type RouteId } from '../../shared/api/routes';
import { BranchSchema, listSchema, MemberSchema, PaymentProviderSchema, SCOPES } from '../../shared/domain/schemas';

/** The body of every error response (docs/api.md "Errors"). */
/* Build-time only: zod stays out of the function bundles. */
export const ErrorBodySchema = z.object({
  error: z.object({
    code: z.enum(ERROR_CODES).meta({ description: 'Stable, machine-readable error code' }),
    message: z.string().meta({ description: 'Human-readable explanation; may change, do not parse it' }),
    request_id: z.string().meta({ description: 'Same as the X-Request-Id response header' }),
  }),
});
export type ErrorBody = z.infer<typeof ErrorBodySchema>;

export const OPENAPI_VERSION = '3.1.0';
/** Version of the contract (info.version). Bump it when the document changes in a way callers see. */
export const API_VERSION = '1.0.0';
export const SECURITY_SCHEME = 'branchApiKey';
/** The one media type of every response body; the `Content-Type` header adds `charset=utf-8`. */
export const MEDIA_TYPE = 'application/json';

type Json = Record<string, unknown>;
const ref = (section: string, name: string) => ({ $ref: `#/components/${section}/${name}` });

const STATUS_NAMES: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
};

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

/** The error responses, one per status, grouped from the catalogue (shared/api/errors.ts). */
export const ERROR_RESPONSES: ErrorResponse[] = [...new Set(ERROR_CODES.map((code) => ERROR_CATALOGUE[code].status))]
  .sort((a, b) => a - b)
  .map((status) => {
    const codes = ERROR_CODES.filter((code) => ERROR_CATALOGUE[code].status === status);
    const entries = codes.map((code): CatalogueEntry => ERROR_CATALOGUE[code]);
    const name = STATUS_NAMES[status];
    if (!name) throw new Error(`No response name for status ${status}: add it to STATUS_NAMES`);
    return {
      status,
      name,
      codes,
      headers: [...new Set(entries.flatMap((entry) => entry.headers))],
      scope: [...new Set(entries.flatMap((entry) => entry.scope))],
    };
  });

/** What each route returns on success and which list parameters it takes. */
const OPERATIONS: Record<RouteId, { schema: string; list: boolean; tag: string; description: string }> = {
  GetBranch: {
    schema: 'Branch',
    list: false,
    tag: 'Branch',
    description: 'The details of the branch the API key belongs to.',
  },
  ListMembers: {
    schema: 'MemberList',
    list: true,
    tag: 'Members',
    description: 'The team members of the branch, in id order, one page at a time.',
  },
  ListPaymentProviders: {
    schema: 'PaymentProviderList',
    list: true,
    tag: 'Payment providers',
    description: 'The active payment providers of the branch, in id order, one page at a time.',
  },
  GetPaymentProvider: {
    schema: 'PaymentProvider',
    list: false,
    tag: 'Payment providers',
    description:
      'One active payment provider of the branch. A provider that is inactive, belongs to another ' +
      'branch or does not exist is the same 404.',
  },
};

const errorSchemaFor = (codes: readonly ErrorCode[]) => {
  const error = ErrorBodySchema.shape.error;
  return ErrorBodySchema.extend({
    error: error.extend({ code: error.shape.code.extract(codes as [ErrorCode, ...ErrorCode[]]) }),
  });
};

/** The zod schemas of components/schemas, converted by zod itself. */
const buildSchemas = (): Record<string, Json> => {
  const registry = z.registry<{ id: string }>();
  registry.add(BranchSchema, { id: 'Branch' });
  registry.add(MemberSchema, { id: 'Member' });
  registry.add(PaymentProviderSchema, { id: 'PaymentProvider' });
  registry.add(listSchema(MemberSchema).meta({ description: 'One page of team members' }), { id: 'MemberList' });
  registry.add(listSchema(PaymentProviderSchema).meta({ description: 'One page of active payment providers' }), {
    id: 'PaymentProviderList',
  });
  for (const { status, name, codes } of ERROR_RESPONSES) {
    registry.add(errorSchemaFor(codes).meta({ description: `Error body of a ${status} response` }), {
      id: `${name}Error`,
    });
  }
  const { schemas } = z.toJSONSchema(registry, {
    target: 'draft-2020-12',
    io: 'output',
    unrepresentable: 'throw',
    uri: (id) => `#/components/schemas/${id}`,
  });
  // Each component is a subschema of the document, not a schema resource of its own.
  return Object.fromEntries(
    Object.entries(schemas).map(([id, { $schema: _schema, $id: _id, ...schema }]) => [id, schema as Json]),
  );
};

const header = (description: string, schema: Json): Json => ({ description, required: true, schema });

/**
 * The rate-limit fields (draft-ietf-httpapi-ratelimit-headers). Not required on most responses: a
 * call refused before its key is known, or made with a revoked or expired key, is not counted.
 */
const RATE_LIMIT_HEADERS: Record<string, Json> = {
  'RateLimit-Policy': {
    description:
      "The key's rate limit: `q` calls per window of `w` seconds. On every response to a key that is neither " +
      'revoked nor expired.',
    required: false,
    schema: { type: 'string', pattern: '^"key";q=[1-9][0-9]*;w=(1|60|3600)$', examples: ['"key";q=50;w=1'] },
  },
  RateLimit: {
    description:
      "What is left of the key's limit: `r` calls remaining in this window, which resets in `t` seconds. On every " +
      'response to a counted key, unless the counter could not be read (the call was then admitted).',
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
        'has been found, success or error. A rolled key announces the end of its grace period here.',
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

/** The rate-limit fields, on every response of an authenticated operation (docs/decisions.md "Rate limits"). */
const RATE_LIMIT_RESPONSE_HEADERS = {
  'RateLimit-Policy': ref('headers', 'RateLimit-Policy'),
  RateLimit: ref('headers', 'RateLimit'),
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

const headerComponents = (): Record<string, Json> =>
  Object.fromEntries(
    Object.entries(HEADERS).map(([name, component]) => [
      name,
      OPTIONAL_HEADER_COMPONENTS.has(name) ? { ...component, required: false } : component,
    ]),
  );

/** Response header name → component name: the headers every response carries, and the optional key expiry. */
const COMMON_RESPONSE_HEADERS = {
  'X-Request-Id': ref('headers', 'X-Request-Id'),
  'Cache-Control': ref('headers', 'Cache-Control'),
  'X-Content-Type-Options': ref('headers', 'X-Content-Type-Options'),
  [API_KEY_EXPIRES_HEADER]: ref('headers', API_KEY_EXPIRES_HEADER),
};

const jsonContent = (schema: string): Json => ({ [MEDIA_TYPE]: { schema: ref('schemas', schema) } });

const buildErrorResponses = (): Record<string, Json> =>
  Object.fromEntries(
    ERROR_RESPONSES.map(({ status, name, codes, headers, scope }) => [
      name,
      {
        description: codes.map((code) => `\`${code}\`: ${ERROR_CATALOGUE[code].when}.`).join(' '),
        headers: {
          ...COMMON_RESPONSE_HEADERS,
          ...(scope.some((one) => one !== 'unmatched') ? RATE_LIMIT_RESPONSE_HEADERS : {}),
          ...Object.fromEntries(headers.map((header) => [header, ref('headers', headerComponent(status, header))])),
        },
        content: jsonContent(`${name}Error`),
      },
    ]),
  );

const PARAMETERS: Record<string, Json> = {
  Limit: {
    name: 'limit',
    in: 'query',
    required: false,
    description: `Page size, 1 to ${MAX_LIMIT}. Anything else is a 400.`,
    schema: { type: 'integer', minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT },
  },
  Cursor: {
    name: 'cursor',
    in: 'query',
    required: false,
    description:
      'Opaque: `next_cursor` of the previous page of the same list. A mistyped or truncated cursor, or one ' +
      'from another list or branch, is a 400. A cursor only ever starts a page of the list the key already reads.',
    schema: { type: 'string', minLength: 1 },
  },
};

const pathParameter = (name: string): Json => ({
  name,
  in: 'path',
  required: true,
  description: 'Id of the payment provider, e.g. `pp_stripe`. An id no provider could have is a 404.',
  schema: { type: 'string', minLength: 1 },
  example: 'pp_stripe',
});

const buildOperation = (route: RouteDefinition): Json => {
  const operation = OPERATIONS[route.id];
  const pathNames = [...route.path.matchAll(/\{(\w+)\}/g)].map((match) => match[1] ?? '');
  const parameters = [
    ...pathNames.map(pathParameter),
    ...(operation.list ? [ref('parameters', 'Limit'), ref('parameters', 'Cursor')] : []),
  ];
  return {
    operationId: route.id,
    summary: route.summary,
    description: `${operation.description}\n\nRequires the \`${route.scope}\` scope.`,
    tags: [operation.tag],
    security: [{ [SECURITY_SCHEME]: [route.scope] }],
    ...(parameters.length > 0 ? { parameters } : {}),
    responses: {
      200: {
        description: 'OK',
        headers: { ...COMMON_RESPONSE_HEADERS, ...RATE_LIMIT_RESPONSE_HEADERS },
        content: jsonContent(operation.schema),
      },
      ...Object.fromEntries(
        ERROR_RESPONSES.filter(
          ({ scope }) => scope.includes('every') || scope.includes(operation.list ? 'list' : 'single'),
        ).map(({ status, name }) => [status, ref('responses', name)]),
      ),
    },
  };
};

const buildPaths = (): Json => {
  const paths: Record<string, Record<string, Json>> = {};
  for (const route of routes) {
    paths[route.path] ??= {};
    paths[route.path]![route.method.toLowerCase()] = buildOperation(route);
  }
  return paths;
};

const DESCRIPTION = `Read-only access to one branch of a business: its details, its team members and its active
payment providers. Every call is made with a branch API key and acts on that key's branch only.

## Authentication

Send the key as \`Authorization: Bearer ${API_KEY_PREFIX}…\`. Keys are created on the branch's settings page.
Every operation requires the \`read\` scope; the other scopes a key may hold (${SCOPES.filter((s) => s !== 'read')
  .map((s) => `\`${s}\``)
  .join(', ')}) grant nothing yet.

## Responses

Every response, success or error, is JSON (\`Content-Type: ${COMMON_HEADERS['Content-Type']}\`) and carries
\`Cache-Control: ${COMMON_HEADERS['Cache-Control']}\`, \`X-Content-Type-Options: ${COMMON_HEADERS['X-Content-Type-Options']}\`
and \`X-Request-Id\`. Errors have the body \`{"error":{"code","message","request_id"}}\`; branch on \`code\`, never on
\`message\`. A path that does not exist is a 404 and a known path with another method is a 405, in the same shape.
A response to a key that has an expiry carries \`${API_KEY_EXPIRES_HEADER}\` (ISO 8601, UTC), so monitoring can warn
before the key lapses.

## Lists

Lists return \`{"object":"list","data":[…],"has_more":…,"next_cursor":…}\`. Pass \`limit\`
(1–${MAX_LIMIT}, default ${DEFAULT_LIMIT}) and, for the next page, \`cursor\` set to the previous page's \`next_cursor\`.`;

/** Builds the whole document. Pure: the same inputs give the same document. */
export const buildOpenApiDocument = (): Json => ({
  openapi: OPENAPI_VERSION,
  info: { title: 'Branch API', version: API_VERSION, description: DESCRIPTION },
  servers: [
    // Plain text: Swagger UI shows server descriptions as they are, not as Markdown.
    { url: 'http://127.0.0.1:3000/api', description: 'Local stack (npm start)' },
    {
      url: 'https://{api_id}.execute-api.{region}.amazonaws.com/api',
      description: 'Deployed: the HTTP API of the CDK stack, stage api',
      variables: {
        api_id: { default: 'api_id', description: 'Id of the API Gateway HTTP API (a CDK stack output)' },
        region: { default: 'eu-west-1', description: 'AWS region of the stack' },
      },
    },
  ],
  security: [{ [SECURITY_SCHEME]: ['read'] }],
  tags: [
    { name: 'Branch', description: 'The branch the key belongs to' },
    { name: 'Members', description: 'Team members of the branch' },
    { name: 'Payment providers', description: 'Active payment providers of the branch' },
  ],
  paths: buildPaths(),
  // What answers when no operation matches (the catch-all function): a validator checks those responses here.
  'x-unmatched-requests': {
    description:
      'A path that matches no operation is a 404 (`not_found`); a path that exists, requested with a method it ' +
      'does not accept, is a 405 (`method_not_allowed`) whose `Allow` header lists the accepted methods.',
    responses: Object.fromEntries(
      ERROR_RESPONSES.filter(({ scope }) => scope.includes('unmatched')).map(({ status, name }) => [
        status,
        ref('responses', name),
      ]),
    ),
  },
  components: {
    securitySchemes: {
      [SECURITY_SCHEME]: {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: `${API_KEY_PREFIX}<random><checksum>`,
        description:
          `A branch API key: \`${API_KEY_PREFIX}\` followed by base62 characters: 256 bits of random data, ` +
          `then a 6-character base62 CRC32 checksum of them (${API_KEY_LENGTH} characters in all), so a ` +
          'mistyped or truncated key is refused as `invalid_api_key` and secret scanners can recognise it. ' +
          'The key is shown once at creation and stored only as a SHA-256 hash. It can expire and be ' +
          'revoked; both take effect on the next request. A key may be limited to IP addresses: a call ' +
          'from elsewhere is a 403 `ip_not_allowed`.',
      },
    },
    schemas: buildSchemas(),
    parameters: PARAMETERS,
    headers: headerComponents(),
    responses: buildErrorResponses(),
  },
});

/** The document as written to docs/openapi.json (before formatting). */
export const serializeOpenApiDocument = (): string => `${JSON.stringify(buildOpenApiDocument(), null, 2)}\n`;
