/**
 * The OpenAPI 3.1 document of the API, built from the same zod schemas the code uses
 * (./schemas.ts, via zod's own JSON Schema draft 2020-12 output, the dialect OpenAPI 3.1 uses),
 * the route table (./routes.ts), the error constructors' status and code pairs and the header
 * values of ./http. `npm run openapi` writes it to docs/openapi.json; a test fails when that
 * file differs from a fresh build, and every response in the test suites is validated against it.
 */
import { z } from 'zod';
import { API_KEY_LENGTH, API_KEY_PREFIX } from './api-key';
import { AUTH_REALM } from './http/errors';
import { DEFAULT_LIMIT, MAX_LIMIT } from './http/pagination';
import { COMMON_HEADERS } from './http/response';
import { routes, type RouteDefinition, type RouteId } from './routes';
import {
  BranchSchema,
  ErrorBodySchema,
  listSchema,
  MemberSchema,
  PaymentProviderSchema,
  SCOPES,
  type ErrorCode,
} from './schemas';

export const OPENAPI_VERSION = '3.1.0';
/** Version of the contract (info.version). Bump it when the document changes in a way callers see. */
export const API_VERSION = '1.0.0';
export const SECURITY_SCHEME = 'branchApiKey';
/** The one media type of every response body; the `Content-Type` header adds `charset=utf-8`. */
export const MEDIA_TYPE = 'application/json';

type Json = Record<string, unknown>;
const ref = (section: string, name: string) => ({ $ref: `#/components/${section}/${name}` });

/** Every error status an operation can return, with its `code` values and the extra header it carries. */
export const ERROR_RESPONSES = {
  400: {
    name: 'BadRequest',
    codes: ['invalid_request'],
    description: 'A query parameter is out of range, or the cursor was altered or belongs to another list.',
  },
  401: {
    name: 'Unauthorized',
    codes: ['missing_api_key', 'invalid_api_key', 'expired_api_key', 'revoked_api_key'],
    description:
      'No `Authorization: Bearer` header (`missing_api_key`); a malformed, mistyped or unknown key ' +
      '(`invalid_api_key`); a key past its expiry (`expired_api_key`); or a revoked key (`revoked_api_key`).',
    header: { name: 'WWW-Authenticate', component: 'WWW-Authenticate-401' },
  },
  403: {
    name: 'Forbidden',
    codes: ['insufficient_scope'],
    description: 'The key is valid but lacks the scope the operation requires.',
    header: { name: 'WWW-Authenticate', component: 'WWW-Authenticate-403' },
  },
  404: {
    name: 'NotFound',
    codes: ['not_found'],
    description:
      'No such resource for this key (a resource of another branch, or an inactive payment provider, ' +
      'answers the same), or no endpoint at this path.',
  },
  405: {
    name: 'MethodNotAllowed',
    codes: ['method_not_allowed'],
    description: 'The path exists but not with this HTTP method. `Allow` lists the methods it accepts.',
    header: { name: 'Allow', component: 'Allow' },
  },
  500: {
    name: 'InternalError',
    codes: ['internal_error'],
    description: 'An unexpected error on the server. Quote the request id when reporting it.',
  },
  503: {
    name: 'ServiceUnavailable',
    codes: ['service_unavailable'],
    description: 'The data store is unreachable or throttling. Retry after `Retry-After` seconds.',
    header: { name: 'Retry-After', component: 'Retry-After' },
  },
} as const satisfies Record<
  number,
  { name: string; codes: readonly ErrorCode[]; description: string; header?: { name: string; component: string } }
>;

export type ErrorStatus = keyof typeof ERROR_RESPONSES;
export const ERROR_STATUSES = Object.keys(ERROR_RESPONSES).map(Number) as ErrorStatus[];

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
  for (const [status, { name, codes }] of Object.entries(ERROR_RESPONSES)) {
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
  'WWW-Authenticate-403': header('RFC 6750 challenge naming the scope the operation requires.', {
    type: 'string',
    pattern: `^Bearer realm="${AUTH_REALM}", error="insufficient_scope", scope="(${SCOPES.join('|')})"$`,
    examples: [`Bearer realm="${AUTH_REALM}", error="insufficient_scope", scope="read"`],
  }),
  Allow: header('The methods this path accepts.', { type: 'string', minLength: 1, examples: ['GET'] }),
  'Retry-After': header('Seconds to wait before retrying.', { type: 'integer', minimum: 0, examples: [1] }),
};

/** Response header name → component name, for the headers every response carries. */
const COMMON_RESPONSE_HEADERS = {
  'X-Request-Id': ref('headers', 'X-Request-Id'),
  'Cache-Control': ref('headers', 'Cache-Control'),
  'X-Content-Type-Options': ref('headers', 'X-Content-Type-Options'),
};

const jsonContent = (schema: string): Json => ({ [MEDIA_TYPE]: { schema: ref('schemas', schema) } });

const buildErrorResponses = (): Record<string, Json> =>
  Object.fromEntries(
    Object.values(ERROR_RESPONSES).map((response) => {
      const extra: Json =
        'header' in response ? { [response.header.name]: ref('headers', response.header.component) } : {};
      return [
        response.name,
        {
          description: `${response.description} \`error.code\`: ${response.codes.map((c) => `\`${c}\``).join(', ')}.`,
          headers: { ...COMMON_RESPONSE_HEADERS, ...extra },
          content: jsonContent(`${response.name}Error`),
        },
      ];
    }),
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
      'Opaque: `next_cursor` of the previous page of the same list. An altered cursor, or one from ' +
      'another list or branch, is a 400.',
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
        headers: COMMON_RESPONSE_HEADERS,
        content: jsonContent(operation.schema),
      },
      ...Object.fromEntries(
        Object.entries(ERROR_RESPONSES).map(([status, { name }]) => [status, ref('responses', name)]),
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

## Lists

Lists return \`{"object":"list","data":[…],"has_more":…,"next_cursor":…}\`. Pass \`limit\`
(1–${MAX_LIMIT}, default ${DEFAULT_LIMIT}) and, for the next page, \`cursor\` set to the previous page's \`next_cursor\`.`;

/** Builds the whole document. Pure: the same inputs give the same document. */
export const buildOpenApiDocument = (): Json => ({
  openapi: OPENAPI_VERSION,
  info: { title: 'Branch API', version: API_VERSION, description: DESCRIPTION },
  servers: [
    { url: 'http://127.0.0.1:3000/api', description: 'Local stack (`npm start`)' },
    {
      url: 'https://{api_id}.execute-api.{region}.amazonaws.com/api',
      description: 'Deployed: the HTTP API of the CDK stack, stage `api`',
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
          'revoked; both take effect on the next request.',
      },
    },
    schemas: buildSchemas(),
    parameters: PARAMETERS,
    headers: HEADERS,
    responses: buildErrorResponses(),
  },
});

/** The document as written to docs/openapi.json (before formatting). */
export const serializeOpenApiDocument = (): string => `${JSON.stringify(buildOpenApiDocument(), null, 2)}\n`;
