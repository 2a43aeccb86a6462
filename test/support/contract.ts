/**
 * Contract checks: a response, as the caller got it, against the committed OpenAPI document
 * (docs/openapi.json). The status code must be documented for the operation (404 for an unknown
 * path, 405 for a known path with another method); the JSON body is validated with openapi-backend's
 * response validator running on Ajv's JSON Schema draft 2020-12 engine (the dialect of OpenAPI
 * 3.1) with ajv-formats, and the headers against their documented schemas with the same engine.
 * Validators are compiled once per process (per test file under jest), on first use.
 *
 *   expectToMatchContract({ method: 'GET', path: '/v1/branch', statusCode, headers, body });
 */
import { readFileSync } from 'node:fs';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { OpenAPIValidator, type Document } from 'openapi-backend';
import { OPENAPI_FILE } from '../../lib/project-paths';

export { OPENAPI_FILE };

/** A response as the caller sees it. `path` is relative to {base_url}, as requested (query allowed). */
export interface ContractResponse {
  method: string;
  path: string;
  statusCode: number;
  headers: Readonly<Record<string, string | undefined>> | undefined;
  /** The raw body, or the already-parsed JSON. */
  body: unknown;
}

type Json = Record<string, any>;

interface PathEntry {
  template: string;
  pattern: RegExp;
  item: Json;
}

export interface Contract {
  document: Json;
  validator: OpenAPIValidator;
  paths: PathEntry[];
  /** Header validators by `operationId status`, compiled on first use. */
  headerValidators: Map<string, ValidateFunction>;
  headerAjv: Ajv2020;
}

/** Resolves the document's internal `$ref`s (it has no external ones and no cycles). */
const dereference = (root: Json): Json => {
  const lookup = (pointer: string): unknown => {
    if (!pointer.startsWith('#/')) throw new Error(`Only internal $refs are supported: ${pointer}`);
    return pointer
      .slice(2)
      .split('/')
      .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
      .reduce<any>((node, key) => node?.[key], root);
  };
  const resolve = (node: unknown, trail: readonly string[]): unknown => {
    if (Array.isArray(node)) return node.map((child) => resolve(child, trail));
    if (node === null || typeof node !== 'object') return node;
    const { $ref, ...rest } = node as Json;
    const siblings = Object.fromEntries(Object.entries(rest).map(([key, value]) => [key, resolve(value, trail)]));
    if (typeof $ref !== 'string') return siblings;
    if (trail.includes($ref)) throw new Error(`Circular $ref ${$ref}`);
    const target = lookup($ref);
    if (target === undefined) throw new Error(`Unresolved $ref ${$ref}`);
    return { ...(resolve(target, [...trail, $ref]) as Json), ...siblings };
  };
  return resolve(root, []) as Json;
};

const templatePattern = (template: string): RegExp =>
  new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`);

/** Builds a contract from a document (the committed one by default). */
export const createContract = (source: Json = JSON.parse(readFileSync(OPENAPI_FILE, 'utf8'))): Contract => {
  const document = dereference(source);
  const validator = new OpenAPIValidator({
    definition: document as Document,
    ajvOpts: { allErrors: true },
    lazyCompileValidators: true,
    customizeAjv: (_draft07, options) => {
      const ajv = new Ajv2020({ ...options, strict: false });
      addFormats(ajv);
      return ajv as never;
    },
  });
  const paths = Object.entries(document.paths as Record<string, Json>).map(([template, item]) => ({
    template,
    pattern: templatePattern(template),
    item,
  }));
  const headerAjv = new Ajv2020({ allErrors: true, strict: false, coerceTypes: true });
  addFormats(headerAjv);
  return { document, validator, paths, headerValidators: new Map(), headerAjv };
};

let shared: Contract | undefined;
/** The contract of the committed document, built once per process (per test file under jest). */
export const committedContract = (): Contract => (shared ??= createContract());

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

const operationsOf = (item: Json): Json[] =>
  HTTP_METHODS.filter((method) => item[method]).map((method) => item[method] as Json);

/**
 * Compiles every body validator of the committed document now (about 0.5 s), so that a test that
 * times a call does not time the first compilation; call it in a `beforeAll` of such tests.
 */
export const warmContract = (contract = committedContract()): void => {
  for (const { item } of contract.paths) {
    for (const operation of operationsOf(item)) {
      contract.validator.getStatusBasedResponseValidatorForOperation(String(operation.operationId));
    }
  }
};

interface AjvError {
  instancePath: string;
  message?: string;
  params?: Record<string, unknown>;
}

const describeErrors = (where: string, errors: readonly AjvError[] | null | undefined): string[] =>
  (errors ?? []).map((error) => {
    const params = error.params ?? {};
    const detail =
      'additionalProperty' in params
        ? ` '${String(params.additionalProperty)}'`
        : 'allowedValues' in params
          ? `: ${JSON.stringify(params.allowedValues)}`
          : 'allowedValue' in params
            ? `: ${JSON.stringify(params.allowedValue)}`
            : '';
    return `${where}${error.instancePath || ''}: ${error.message ?? 'is not valid'}${detail}`;
  });

/**
 * The documented headers of a response as one schema: those marked `required` must be there,
 * values are checked against their schemas (as strings coerced to the schema's type). Compiled here
 * rather than with openapi-backend's header validator, which compiles four variants of every
 * status of an operation at once (about 0.6 s per test file) and treats every header as required.
 */
const headerValidator = (contract: Contract, operationId: string, status: string, documented: Json) => {
  const key = `${operationId} ${status}`;
  let validate = contract.headerValidators.get(key);
  if (!validate) {
    const entries = Object.entries((documented.headers ?? {}) as Record<string, Json>);
    validate = contract.headerAjv.compile({
      type: 'object',
      properties: Object.fromEntries(entries.map(([name, header]) => [name.toLowerCase(), header.schema ?? {}])),
      required: entries.filter(([, header]) => header.required === true).map(([name]) => name.toLowerCase()),
    });
    contract.headerValidators.set(key, validate);
  }
  return validate;
};

/** The body validator of a response no operation owns (an unmatched request's), compiled on first use. */
const bodyValidator = (contract: Contract, key: string, documented: Json) => {
  let validate = contract.headerValidators.get(`body ${key}`);
  if (!validate) {
    // Not the header instance: that one coerces types, which a body check must not.
    const ajv = new Ajv2020({ allErrors: true, strict: false });
    addFormats(ajv);
    validate = ajv.compile(documented.content?.['application/json']?.schema ?? {});
    contract.headerValidators.set(`body ${key}`, validate);
  }
  return validate;
};

/** Every way the response departs from the contract; empty when it matches. */
export const contractViolations = (response: ContractResponse, contract = committedContract()): string[] => {
  const method = response.method.toLowerCase();
  const path = response.path.split('?')[0] ?? '';
  const entry = contract.paths.find((candidate) => candidate.pattern.test(path));

  // The responses that apply: the operation's, or those of requests no operation matches.
  const unmatched = (contract.document['x-unmatched-requests']?.responses ?? {}) as Record<string, Json>;
  let operation: Json | undefined;
  let responses: Record<string, Json>;
  let target: string;
  if (entry?.item[method]) {
    operation = entry.item[method] as Json;
    responses = operation.responses ?? {};
    target = `operation ${String(operation.operationId)} (${method.toUpperCase()} ${entry.template})`;
  } else {
    // A known path answers 405 to another method; an unknown path 404; either may fail with a 500.
    const excluded = entry ? '404' : '405';
    responses = Object.fromEntries(Object.entries(unmatched).filter(([code]) => code !== excluded));
    target = entry ? `${entry.template} with method ${method.toUpperCase()} (not documented)` : 'an unknown path';
  }
  const status = String(response.statusCode);
  const documented = responses[status];
  if (!documented) {
    return [`status ${status} is not documented for ${target}; documented: ${Object.keys(responses).join(', ')}`];
  }
  const validatorKey = operation ? String(operation.operationId) : `unmatched`;
  const problems: string[] = [];

  const headers = Object.fromEntries(
    Object.entries(response.headers ?? {})
      .filter((pair): pair is [string, string] => pair[1] !== undefined)
      .map(([name, value]) => [name.toLowerCase(), value]),
  );
  const validateHeaders = headerValidator(contract, validatorKey, status, documented);
  validateHeaders({ ...headers });
  problems.push(...describeErrors('headers', validateHeaders.errors));
  // What the document says a response never carries (those answered before any key is read).
  for (const name of (documented['x-absent-headers'] ?? []) as string[]) {
    if (headers[name.toLowerCase()] !== undefined) {
      problems.push(`headers/${name.toLowerCase()}: documented as absent from this response`);
    }
  }

  const mediaTypes = Object.keys(documented.content ?? {});
  const contentType = headers['content-type'];
  if (!mediaTypes.some((mediaType) => contentType === `${mediaType}; charset=utf-8`)) {
    problems.push(
      `headers/content-type: ${JSON.stringify(contentType)} is not one of ${mediaTypes
        .map((mediaType) => `"${mediaType}; charset=utf-8"`)
        .join(', ')}`,
    );
  }

  let body = response.body;
  if (typeof response.body === 'string') {
    const text = response.body;
    try {
      body = JSON.parse(text);
    } catch {
      problems.push(`body: not JSON: ${text.slice(0, 80)}`);
      return problems;
    }
  }
  if (operation) {
    const bodyResult = contract.validator.validateResponse(body, operation.operationId, response.statusCode);
    problems.push(...describeErrors('body', bodyResult.errors));
  } else {
    const validateBody = bodyValidator(contract, `${validatorKey} ${status}`, documented);
    validateBody(body);
    problems.push(...describeErrors('body', validateBody.errors));
  }
  return problems;
};

export class ContractViolation extends Error {
  override name = 'ContractViolation';
}

/** Throws a readable error unless the response matches the OpenAPI document. */
export const expectToMatchContract = (response: ContractResponse, contract?: Contract): void => {
  const problems = contractViolations(response, contract);
  if (problems.length === 0) return;
  throw new ContractViolation(
    `${response.method.toUpperCase()} ${response.path} → ${response.statusCode} does not match ` +
      `docs/openapi.json:\n${problems.map((problem) => `  - ${problem}`).join('\n')}`,
  );
};
