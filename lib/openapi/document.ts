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
import { DEFAULT_LIMIT, LIMIT_PATTERN, MAX_LIMIT } from '../../shared/api/http/pagination';
import { MAX_REQUEST_HEADER_BYTES } from '../../shared/api/http/request-limits';
import { COMMON_HEADERS } from '../../shared/api/http/response';
import { API_KEY_EXPIRES_HEADER } from '../../shared/api/middlewares/response-headers';
import { API_STAGE, routes, secretScanningRoute, type RouteDefinition, type RouteId } from '../../shared/api/routes';
import { MAX_REPORT_BYTES, ReportAnswerSchema, ReportSchema } from '../../shared/domain/secret-scanning';
import { localBaseUrl } from '../local-defaults';
import { BranchSchema, listSchema, MemberSchema, PaymentProviderSchema, SCOPES } from '../../shared/domain/schemas';
import {
  buildErrorResponses,
  ERROR_RESPONSES,
  errorSchemaFor,
  headerComponents,
  jsonContent,
  KEYED_RESPONSE_HEADERS,
  KEYLESS_RESPONSE_HEADERS,
  keylessResponses,
  ref,
  type Json,
} from './responses';

export { ERROR_RESPONSES, type ErrorResponse } from './responses';

export const OPENAPI_VERSION = '3.1.0';
/** Version of the contract (info.version). Bump it when the document changes in a way callers see. */
export const API_VERSION = '1.1.0';
export const SECURITY_SCHEME = 'branchApiKey';

/** What each route returns on success (a `…List` schema: a list, with its parameters). */
const OPERATIONS: Record<RouteId, { schema: string; tag: string; description: string }> = {
  GetBranch: { schema: 'Branch', tag: 'Branch', description: 'The details of the branch the API key belongs to.' },
  ListMembers: {
    schema: 'MemberList',
    tag: 'Members',
    description: 'The team members of the branch, in id order, one page at a time.',
  },
  ListPaymentProviders: {
    schema: 'PaymentProviderList',
    tag: 'Payment providers',
    description: 'The active payment providers of the branch, in id order, one page at a time.',
  },
  GetPaymentProvider: {
    schema: 'PaymentProvider',
    tag: 'Payment providers',
    description:
      'One active payment provider of the branch. A provider that is inactive, belongs to another ' +
      'branch or does not exist is the same 404.',
  },
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
  registry.add(ReportSchema, { id: 'SecretScanningReport' });
  registry.add(ReportAnswerSchema, { id: 'SecretScanningAnswer' });
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

const PARAMETERS: Record<string, Json> = {
  Limit: {
    name: 'limit',
    in: 'query',
    required: false,
    description:
      `Page size: a whole number from 1 to ${MAX_LIMIT}, written in plain decimal digits (no sign, exponent, ` +
      'leading zero or space). Anything else, an empty value included, is a 400.',
    // A pattern, not `type: integer`: validators coerce query text to integers differently (docs/decisions.md "HTTP contract").
    schema: { type: 'string', pattern: LIMIT_PATTERN.source, default: String(DEFAULT_LIMIT), examples: ['20'] },
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

/** A required parameter of text in the path or a header. */
const textParameter = (name: string, where: 'path' | 'header', description: string, extra?: Json): Json => ({
  name,
  in: where,
  required: true,
  description,
  schema: { type: 'string', minLength: 1 },
  ...extra,
});

const PROVIDER_ID = 'Id of the payment provider, e.g. `pp_stripe`. An id no provider could have is a 404.';

const buildOperation = (route: RouteDefinition): Json => {
  const operation = OPERATIONS[route.id];
  const list = operation.schema.endsWith('List');
  const pathNames = [...route.path.matchAll(/\{(\w+)\}/g)].map((match) => match[1] ?? '');
  const parameters = [
    ...pathNames.map((name) => textParameter(name, 'path', PROVIDER_ID, { example: 'pp_stripe' })),
    ...(list ? [ref('parameters', 'Limit'), ref('parameters', 'Cursor')] : []),
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
        headers: KEYED_RESPONSE_HEADERS,
        content: jsonContent(operation.schema),
      },
      ...keylessResponses(),
      ...Object.fromEntries(
        ERROR_RESPONSES.filter(({ scope }) => scope.includes('every') || scope.includes(list ? 'list' : 'single')).map(
          (response) => [response.status, ref('responses', response.name)],
        ),
      ),
    },
  };
};

/** The secret scanning report (docs/decisions.md "Leaked keys"): no API key, a signature instead. */
const buildReportOperation = (): Json => ({
  operationId: secretScanningRoute.id,
  summary: secretScanningRoute.summary,
  description:
    'Where GitHub secret scanning sends the tokens it found in public code. The signature is checked before ' +
    'anything in the body is read (`invalid_signature` otherwise). Each reported token that is a live API key ' +
    "is revoked at once (its next call answers `revoked_api_key`), its leak is recorded with the report's " +
    '`url` and `source`, and a `Key Leaked` event is sent. The answer labels each token by its SHA-256: ' +
    '`true_positive` for a key of this service (revoked now or before), `false_positive` for anything else. ' +
    'Each token is handled on its own: when one could not be revoked, the others are still revoked and ' +
    'the report answers 5xx (503 when the database is unavailable), to be sent again. ' +
    `The same report sent again changes nothing more. Bodies over ${MAX_REPORT_BYTES} bytes are refused.`,
  tags: ['Security'],
  security: [],
  parameters: [
    textParameter('Github-Public-Key-Identifier', 'header', 'Identifier of the public key that signed the report.'),
    textParameter('Github-Public-Key-Signature', 'header', 'Base64 ECDSA P-256 / SHA-256 signature of the raw body.'),
  ],
  requestBody: { required: true, content: jsonContent('SecretScanningReport') },
  responses: {
    200: {
      description: 'One entry per reported token, in the order sent.',
      headers: KEYLESS_RESPONSE_HEADERS,
      content: jsonContent('SecretScanningAnswer'),
    },
    ...keylessResponses('report'),
  },
});

const buildPaths = (): Json => {
  const paths: Record<string, Record<string, Json>> = {};
  for (const route of routes) {
    paths[route.path] ??= {};
    paths[route.path]![route.method.toLowerCase()] = buildOperation(route);
  }
  paths[secretScanningRoute.path] = { post: buildReportOperation() };
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
before the key lapses, and a response to a counted key carries the rate-limit fields; a 404 or 405 for a path or
method no operation has is answered before the key is read and carries neither. Request headers over
${MAX_REQUEST_HEADER_BYTES.toLocaleString('en')} bytes are refused before any key is read: deployed by API Gateway itself, in its own shape;
locally as a 431 \`headers_too_large\`.

Query parameters an operation does not list are ignored.

## Lists

Lists return \`{"object":"list","data":[…],"has_more":…,"next_cursor":…}\`. Pass \`limit\`
(\`1\` to \`${MAX_LIMIT}\` in plain digits, default ${DEFAULT_LIMIT}) and, for the next page, \`cursor\` set to the previous page's \`next_cursor\`.`;

/** Builds the whole document. Pure: the same inputs give the same document. */
export const buildOpenApiDocument = (): Json => ({
  openapi: OPENAPI_VERSION,
  info: { title: 'Branch API', version: API_VERSION, description: DESCRIPTION },
  servers: [
    // Plain text: Swagger UI shows server descriptions as they are, not as Markdown.
    { url: localBaseUrl(), description: 'Local stack (npm start)' },
    {
      url: `https://{api_id}.execute-api.{region}.amazonaws.com/${API_STAGE}`,
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
    { name: 'Security', description: 'Reports of leaked keys (GitHub secret scanning)' },
  ],
  paths: buildPaths(),
  // What answers when no operation matches (the catch-all function): a validator checks those responses here.
  'x-unmatched-requests': {
    description:
      'A path that matches no operation is a 404 (`not_found`); a path that exists, requested with a method it ' +
      'does not accept, is a 405 (`method_not_allowed`) whose `Allow` header lists the accepted methods. Both are ' +
      'answered before any key is read: they carry no rate-limit fields and no `Api-Key-Expires`, and are not ' +
      `counted against a key's limit. Request headers over ${MAX_REQUEST_HEADER_BYTES.toLocaleString('en')} bytes ` +
      'are a 431 on any path.',
    responses: keylessResponses('unmatched'),
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
