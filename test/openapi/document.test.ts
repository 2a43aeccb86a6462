/**
 * docs/openapi.json: up to date with the code, a valid OpenAPI 3.1 document, and saying what the
 * API does (every status of every operation, error codes, headers, security, parameters).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildOpenApiDocument } from '../../lib/openapi/document';
import { ERROR_CATALOGUE, ERROR_CODES, type ErrorScope } from '../../shared/api/errors';
import { telemetry } from '../../shared/lambda/observability';
import { createMiddlewareChain } from '../../shared/api/middleware-chain';
import { routes, secretScanningRoute } from '../../shared/api/routes';
import { OPENAPI_FILE } from '../support/contract';
import { ERROR_EXAMPLES } from '../support/errors';
import { invoke } from '../support/harness';

const committed = JSON.parse(readFileSync(OPENAPI_FILE, 'utf8'));
const ROOT = join(import.meta.dirname, '..', '..');

/** Follows an internal `$ref` of the committed document. */
const resolve = (node: any): any =>
  node?.$ref
    ? resolve(
        node.$ref
          .slice(2)
          .split('/')
          .reduce((at: any, key: string) => at[key], committed),
      )
    : node;

const operations = Object.entries(committed.paths as Record<string, Record<string, any>>).flatMap(([path, item]) =>
  Object.entries(item).map(([method, operation]) => ({ path, method, operation })),
);

describe('docs/openapi.json', () => {
  it('is what `npm run openapi` generates from the code now (run it and commit the file if this fails)', () => {
    expect(committed).toEqual(buildOpenApiDocument());
  });

  /** Runs the validator's own CLI (ESM-only, so not loaded into jest) on a file. */
  const validate = (file: string) => {
    const cli = join(ROOT, 'node_modules/@seriousme/openapi-schema-validator/bin/validate-api-cli.js');
    // It prints its verdict as JSON (and exits non-zero when the document is invalid).
    return JSON.parse(spawnSync(process.execPath, [cli, file], { encoding: 'utf8' }).stdout);
  };

  it('validates against the OpenAPI 3.1 schema (@seriousme/openapi-schema-validator)', () => {
    expect(committed.openapi).toMatch(/^3\.1\.\d+$/);
    expect(validate(OPENAPI_FILE)).toEqual({ valid: true });
    // The same check refuses a broken document, so it is not vacuous.
    const broken = structuredClone(committed);
    delete broken.paths['/v1/branch'].get.responses['200'].description;
    const file = join(mkdtempSync(join(tmpdir(), 'openapi-')), 'broken.json');
    writeFileSync(file, JSON.stringify(broken));
    expect(validate(file)).toMatchObject({ valid: false });
  });

  it('has one operation per route of the route table, requiring its scope', () => {
    expect(operations.map(({ operation }) => operation.operationId).sort()).toEqual(
      [...routes.map((r) => r.id), secretScanningRoute.id].sort(),
    );
    for (const route of routes) {
      const operation = committed.paths[route.path]?.[route.method.toLowerCase()];
      expect(operation).toMatchObject({ operationId: route.id, security: [{ branchApiKey: ['read'] }] });
    }
  });

  it('describes the bearer scheme and the wsk_ key format', () => {
    const scheme = committed.components.securitySchemes.branchApiKey;
    expect(scheme).toMatchObject({ type: 'http', scheme: 'bearer', bearerFormat: expect.stringMatching(/^wsk_/) });
    expect(scheme.description).toMatch(/`wsk_`.*base62.*CRC32 checksum.*53 characters/s);
    expect(committed.security).toEqual([{ branchApiKey: ['read'] }]);
  });

  it('lists the local and the deployed server', () => {
    expect(committed.servers.map((server: { url: string }) => server.url)).toEqual([
      'http://127.0.0.1:3000/api',
      'https://{api_id}.execute-api.{region}.amazonaws.com/api',
    ]);
  });

  it('documents limit and cursor on lists and the id path parameter', () => {
    const parameters = (id: string) =>
      (operations.find(({ operation }) => operation.operationId === id)?.operation.parameters ?? []).map(resolve);
    for (const id of ['ListMembers', 'ListPaymentProviders']) {
      expect(parameters(id)).toEqual([
        expect.objectContaining({
          name: 'limit',
          in: 'query',
          // The exact text the code accepts, so every validator gives the code's answer.
          schema: { type: 'string', pattern: '^(?:100|[1-9][0-9]?)$', default: '50', examples: ['20'] },
        }),
        expect.objectContaining({ name: 'cursor', in: 'query', schema: expect.objectContaining({ type: 'string' }) }),
      ]);
    }
    expect(parameters('GetPaymentProvider')).toEqual([
      expect.objectContaining({ name: 'id', in: 'path', required: true }),
    ]);
    expect(parameters('GetBranch')).toEqual([]);
  });

  const CODES: Record<string, string[]> = {
    400: ['invalid_request'],
    401: ['missing_api_key', 'invalid_api_key', 'expired_api_key', 'revoked_api_key', 'disabled_api_key'],
    403: ['insufficient_scope', 'ip_not_allowed'],
    404: ['not_found'],
    405: ['method_not_allowed'],
    429: ['rate_limited'],
    431: ['headers_too_large'],
    500: ['internal_error'],
    503: ['service_unavailable'],
  };
  const EXTRA_HEADERS: Record<string, string[]> = {
    200: [],
    400: [],
    401: ['WWW-Authenticate'],
    403: ['WWW-Authenticate'],
    404: [],
    405: ['Allow'],
    429: ['Retry-After', 'RateLimit-Policy', 'RateLimit'],
    431: [],
    500: [],
    503: ['Retry-After'],
  };
  /** On every response of an operation, required only on the 429 (a 401 is not counted). */
  const RATE_LIMIT_HEADERS = ['RateLimit-Policy', 'RateLimit'];
  /** Answered before any key is read (by the gateway): none of the key's headers, and the document says so. */
  const KEYLESS = ['431'];
  const KEY_HEADERS = [...RATE_LIMIT_HEADERS, 'Api-Key-Expires'];

  /** Only what each operation can answer: 400 needs query parameters, 404 a single resource. */
  const STATUSES: Record<string, string[]> = {
    GetBranch: ['200', '401', '403', '404', '429', '431', '500', '503'],
    ListMembers: ['200', '400', '401', '403', '429', '431', '500', '503'],
    ListPaymentProviders: ['200', '400', '401', '403', '429', '431', '500', '503'],
    GetPaymentProvider: ['200', '401', '403', '404', '429', '431', '500', '503'],
  };

  const keyed = operations.filter(({ operation }) => operation.operationId !== secretScanningRoute.id);
  describe.each(keyed.map(({ operation }) => [operation.operationId, operation]))('%s', (id, operation) => {
    const statuses = STATUSES[id] ?? [];
    it('lists exactly the statuses it can answer with', () => {
      expect(Object.keys(operation.responses)).toEqual(statuses);
    });

    const own = (table: Record<string, string[]>) =>
      Object.entries(table).filter(([status]) => statuses.includes(status));
    it.each(own(CODES))('%s has the error body with exactly its codes', (status, codes) => {
      const schema = resolve(resolve(operation.responses[status]).content['application/json'].schema);
      expect(schema.required).toEqual(['error']);
      expect(schema.properties.error.required).toEqual(['code', 'message', 'request_id']);
      expect(schema.properties.error.properties.code.enum).toEqual(codes);
    });

    it.each(own(EXTRA_HEADERS))('%s carries its required headers', (status, extra) => {
      const response = resolve(operation.responses[status]);
      const headers = response.headers;
      const keyless = KEYLESS.includes(status);
      expect(Object.keys(headers).sort()).toEqual(
        [
          ...new Set([
            'X-Request-Id',
            'Cache-Control',
            'X-Content-Type-Options',
            ...extra,
            ...(keyless ? [] : KEY_HEADERS),
          ]),
        ].sort(),
      );
      expect(response['x-absent-headers']).toEqual(keyless ? KEY_HEADERS : undefined);
      // Api-Key-Expires only for a key that has an expiry; a 403 ip_not_allowed has no challenge.
      const optional = [
        'Api-Key-Expires',
        ...(status === '403' ? ['WWW-Authenticate'] : []),
        ...(status === '429' ? [] : RATE_LIMIT_HEADERS),
      ];
      for (const [name, header] of Object.entries(headers)) {
        expect([name, resolve(header).required]).toEqual([name, !optional.includes(name)]);
      }
      expect(Object.keys(resolve(operation.responses[status]).content)).toEqual(['application/json']);
    });
  });

  it('fully specifies branch, member and payment provider: types, required fields, examples', () => {
    for (const name of ['Branch', 'Member', 'PaymentProvider']) {
      const schema = committed.components.schemas[name];
      expect(schema).toMatchObject({ type: 'object', additionalProperties: false });
      expect(schema.required.sort()).toEqual(Object.keys(schema.properties).sort());
      const leaves = Object.entries<any>(schema.properties).flatMap(([key, property]) =>
        property.type === 'object' ? Object.entries<any>(property.properties) : [[key, property]],
      );
      for (const [key, property] of leaves) {
        expect([key, property.type]).toEqual([key, key === 'active' ? 'boolean' : 'string']);
        expect([key, property.examples ?? property.const ?? property.enum]).toEqual([key, expect.anything()]);
      }
    }
    expect(committed.components.schemas.Member.properties.email.format).toBe('email');
    expect(committed.components.schemas.Branch.properties.created_at.format).toBe('date-time');
  });
});

describe('the secret scanning report', () => {
  const operation = committed.paths[secretScanningRoute.path].post;

  it('takes no API key but two signature headers and a JSON array body', () => {
    expect(operation.security).toEqual([]);
    expect(operation.parameters.map((one: any) => [one.name, one.in, one.required])).toEqual([
      ['Github-Public-Key-Identifier', 'header', true],
      ['Github-Public-Key-Signature', 'header', true],
    ]);
    expect(resolve(operation.requestBody.content['application/json'].schema)).toMatchObject({
      type: 'array',
      items: { required: ['token', 'type', 'url', 'source'] },
    });
  });

  it('answers 200 or exactly its own errors, each with exactly its codes and no bearer challenge', () => {
    const codes = Object.fromEntries(
      Object.entries<any>(operation.responses)
        .filter(([status]) => status !== '200')
        .map(([status, response]) => [
          status,
          resolve(resolve(response).content['application/json'].schema).properties.error.properties.code.enum,
        ]),
    );
    expect(codes).toEqual({
      400: ['invalid_request'],
      401: ['invalid_signature'],
      413: ['payload_too_large'],
      431: ['headers_too_large'],
      500: ['internal_error'],
      503: ['service_unavailable'],
    });
    expect(Object.keys(resolve(operation.responses['401']).headers)).not.toContain('WWW-Authenticate');
  });
});

describe('unmatched requests', () => {
  it('documents the 404 of an unknown path and the 405 of a known path with another method', () => {
    const { responses } = committed['x-unmatched-requests'];
    expect(Object.keys(responses)).toEqual(['404', '405', '431', '500']);
    expect(Object.keys(resolve(responses['405']).headers)).toContain('Allow');
  });

  it('says they are answered before any key is read: no rate-limit fields, no Api-Key-Expires', () => {
    for (const response of Object.values<any>(committed['x-unmatched-requests'].responses).map(resolve)) {
      expect(response['x-absent-headers']).toEqual(['RateLimit-Policy', 'RateLimit', 'Api-Key-Expires']);
      expect(Object.keys(response.headers)).not.toEqual(expect.arrayContaining(['RateLimit']));
      expect(Object.keys(response.headers)).not.toContain('Api-Key-Expires');
      expect(response.description).toMatch(/^Answered before any key is read/);
    }
  });
});

describe('the error responses the middleware chain writes are the documented ones', () => {
  const errors = Object.values(ERROR_EXAMPLES).map((build) => build());

  it('covers every error code of the catalogue', () => {
    expect(errors.map((error) => error.code).sort()).toEqual([...ERROR_CODES].sort());
  });

  it.each(errors.map((error) => [error.statusCode, error.code, error] as const))(
    '%s %s',
    async (status, code, error) => {
      const handler = createMiddlewareChain(async () => {
        throw error;
      }, telemetry);
      const scope: readonly ErrorScope[] = ERROR_CATALOGUE[code].scope;
      // The harness checks every response it sees against the document; which paths apply depends on scope.
      const paths =
        scope.includes('unmatched') || scope.includes('gateway')
          ? ['/v1/nowhere']
          : scope.every((one) => one === 'report')
            ? [secretScanningRoute.path]
            : routes
                .filter(
                  (route) =>
                    scope.includes('every') ||
                    scope.includes(route.path.includes('{') || route.id === 'GetBranch' ? 'single' : 'list'),
                )
                .map((route) => route.path.replace('{id}', 'pp_stripe'));
      if (code === 'method_not_allowed') paths.splice(0, paths.length, '/v1/members');
      for (const path of paths) {
        const method = code === 'method_not_allowed' || path === secretScanningRoute.path ? 'POST' : 'GET';
        const res = await invoke(handler, { method, path });
        expect([res.statusCode, res.json.error.code]).toEqual([status, code]);
      }
    },
  );
});
