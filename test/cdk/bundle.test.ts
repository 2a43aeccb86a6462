/**
 * The real bundles: the stack is synthesized with bundling on (local esbuild, the stack's own
 * options), each bundle is checked for its settings and size, and then each is run as Lambda runs
 * it: a fresh Node process imports `index.mjs` with the function's environment from the template
 * and calls `handler(event, context)` with an API Gateway v2 event, against the embedded DynamoDB.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Asset } from 'aws-cdk-lib/aws-s3-assets';
import { BUNDLE_BUDGET_BYTES, type ApiFunction } from '../../lib/infra/api-function';
import { BranchApiStack } from '../../lib/infra/branch-api-stack';
import { buildEvent, type EventInput } from '../../lib/local/events';
import { getRoute, routeKey, routes } from '../../shared/api/routes';
import { expectToMatchContract } from '../support/contract';
import { mainBranch } from '../support/fixtures';
import { createKey, createTables, seedBranches, tableNames, usageRecordFor } from '../support/harness';
import { logicalId, newApp } from './support';

const MARK = '@@RESULT@@';
/** What the Lambda runtime does with an ESM handler, in a few lines: import once, invoke. */
const RUNNER = `
let input = '';
for await (const chunk of process.stdin) input += chunk;
const event = JSON.parse(input);
const { handler } = await import(process.argv.at(-1));
const context = {
  awsRequestId: event.requestContext.requestId,
  functionName: 'bundle-test',
  functionVersion: '$LATEST',
  memoryLimitInMB: '512',
  getRemainingTimeInMillis: () => 10000,
};
const response = await handler(event, context);
process.stdout.write('\\n${MARK}' + JSON.stringify(response) + '\\n');
`;

let outdir: string;
let stack: BranchApiStack;
let template: { Resources: Record<string, { Properties: any }> };
let key: string;

beforeAll(async () => {
  outdir = mkdtempSync(path.join(tmpdir(), 'branch-api-bundles-'));
  const app = newApp({ bundle: true, outdir });
  stack = new BranchApiStack(app, 'Bundled'); // bundles the five functions
  app.synth();
  template = JSON.parse(readFileSync(path.join(outdir, 'Bundled.template.json'), 'utf8'));
  await createTables();
  await seedBranches();
  ({ key } = await createKey());
}, 60_000);

afterAll(() => rmSync(outdir, { recursive: true, force: true }));

const allFunctions = (): [string, ApiFunction][] => [...Object.entries(stack.functions), ['Fallback', stack.fallback]];

const bundlePath = (fn: ApiFunction) =>
  path.join(outdir, (fn.function.node.findChild('Code') as Asset).assetPath, 'index.mjs');

/** The function's environment as deployed, with this test file's tables in place of the table refs. */
const environmentOf = (fn: ApiFunction): Record<string, string> => {
  const variables = template.Resources[logicalId(fn.function)]!.Properties.Environment.Variables;
  const tables: Record<string, string> = {
    [logicalId(stack.tables.keys)]: tableNames.keys,
    [logicalId(stack.tables.usage)]: tableNames.usage,
    [logicalId(stack.tables.branchData)]: tableNames.branchData,
    [logicalId(stack.tables.rateLimits)]: tableNames.rateLimits,
  };
  return Object.fromEntries(
    Object.entries(variables).map(([name, value]: [string, any]) => [
      name,
      typeof value === 'string' ? value : (tables[value.Ref] ?? `unresolved ${JSON.stringify(value)}`),
    ]),
  );
};

const invokeBundle = (fn: ApiFunction, input: EventInput, env: Record<string, string> = {}) =>
  new Promise<{ response: any; json: any; stdout: string }>((resolve, reject) => {
    const event = buildEvent({ ...input, headers: { host: 'localhost', 'user-agent': 'jest', ...input.headers } });
    const child = execFile(
      process.execPath,
      ['--input-type=module', '-e', RUNNER, pathToFileURL(bundlePath(fn)).href],
      {
        // What Lambda provides: region, the role's credentials in the environment, the function's variables.
        env: {
          PATH: process.env.PATH,
          AWS_REGION: 'local',
          AWS_ACCESS_KEY_ID: 'bundle-test',
          AWS_SECRET_ACCESS_KEY: 'bundle-test',
          AWS_SESSION_TOKEN: 'bundle-test',
          DYNAMODB_ENDPOINT: process.env.DYNAMODB_ENDPOINT,
          ...environmentOf(fn),
          ...env,
        },
        timeout: 20_000,
      },
      (error, stdout, stderr) => {
        const line = stdout.split('\n').find((candidate) => candidate.startsWith(MARK));
        if (error || !line) return reject(new Error(`bundle failed: ${error?.message}\n${stderr}\n${stdout}`));
        const response = JSON.parse(line.slice(MARK.length));
        const headers = Object.fromEntries(
          Object.entries(response.headers ?? {}).map(([name, value]) => [name.toLowerCase(), value]),
        );
        try {
          // A bundle's responses must match the OpenAPI document like the source's do.
          expectToMatchContract({
            method: input.method ?? 'GET',
            path: input.path,
            statusCode: response.statusCode,
            headers: headers as Record<string, string>,
            body: response.body,
          });
        } catch (violation) {
          return reject(violation as Error);
        }
        resolve({ response: { ...response, headers }, json: JSON.parse(response.body), stdout: stdout + stderr });
      },
    );
    child.stdin?.end(JSON.stringify(event));
  });

describe('bundles', () => {
  it.each(['GetBranch', 'ListMembers', 'ListPaymentProviders', 'GetPaymentProvider', 'Fallback'])(
    '%s: minified ESM with everything it imports inside, a linked source map, within budget',
    (name) => {
      const fn = Object.fromEntries(allFunctions())[name]!;
      const file = bundlePath(fn);
      const code = readFileSync(file, 'utf8');
      // (Assertions on excerpts: a failure should not print a whole bundle.)
      expect(statSync(file).size).toBeLessThanOrEqual(BUNDLE_BUDGET_BYTES);
      expect(code.match(/export\s*\{[^}]*\}/g)?.at(-1)).toMatch(/\bas handler\b/);
      expect(code.includes('module.exports')).toBe(false);
      expect(code.split('\n').length).toBeLessThan(100);
      // Nothing left for the runtime to provide: no import of any package, only of node: built-ins.
      expect(code.match(/(?:\bfrom|\bimport\s*\(?)\s*["'](?!node:)[^"']+["']/g) ?? []).toEqual([]);
      expect(code.slice(-60)).toMatch(/\/\/# sourceMappingURL=index\.mjs\.map\s*$/);
      const map = JSON.parse(readFileSync(`${file}.map`, 'utf8'));
      expect(map.sources.some((source: string) => source.includes('shared/'))).toBe(true);
      expect(map.sourcesContent).toBeUndefined();
      if (name === 'Fallback') {
        // The catch-all reads no table: no AWS SDK in its bundle at all.
        expect(code).not.toMatch(/DynamoDB|credential-provider|is not bundled in this Lambda function/);
      } else {
        // The credential providers Lambda never reaches are replaced by the declining stubs.
        expect(code).toContain('is not bundled in this Lambda function');
      }
      expect(existsSync(path.join(path.dirname(file), 'package.json'))).toBe(false);
    },
  );
});

describe('bundled handlers against DynamoDB', () => {
  it('GET /v1/branch: 200 with the branch, a usage record, and the key in no log line', async () => {
    const route = getRoute('GetBranch');
    const { response, json, stdout } = await invokeBundle(
      stack.functions.GetBranch,
      { path: route.path, routeKey: routeKey(route), headers: { authorization: `Bearer ${key}` } },
      { POWERTOOLS_LOG_LEVEL: 'DEBUG' },
    );
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(json).toEqual({
      id: 'br_main',
      object: 'branch',
      name: mainBranch.name,
      business_name: mainBranch.business_name,
      timezone: mainBranch.timezone,
      currency: mainBranch.currency,
      address: mainBranch.address,
      created_at: mainBranch.created_at,
    });
    const record = await usageRecordFor(response.headers['x-request-id']);
    expect(record).toMatchObject({ status: 200, route: 'GET /v1/branch', method: 'GET', path: '/api/v1/branch' });
    expect(stdout).toContain('"message":"Usage recorded"');
    expect(stdout).toContain('"service":"branch-api"');
    expect(stdout).not.toContain(key);
  });

  it.each(routes.filter((route) => route.id !== 'GetBranch').map((route) => route.id))(
    '%s serves a 200 from its bundle',
    async (id) => {
      const route = getRoute(id);
      const { response, json } = await invokeBundle(stack.functions[id], {
        path: route.path.replace('{id}', 'pp_stripe'),
        routeKey: routeKey(route),
        ...(route.path.includes('{id}') ? { pathParameters: { id: 'pp_stripe' } } : {}),
        headers: { authorization: `Bearer ${key}` },
      });
      expect(response.statusCode).toBe(200);
      expect(json.object).toBe(id === 'GetPaymentProvider' ? 'payment_provider' : 'list');
    },
  );

  it('an unknown key is a 401 from the bundle', async () => {
    const route = getRoute('ListMembers');
    const { response, json } = await invokeBundle(stack.functions.ListMembers, {
      path: route.path,
      routeKey: routeKey(route),
      headers: { authorization: 'Bearer wsk_not_a_real_key' },
    });
    expect(response.statusCode).toBe(401);
    expect(json.error.code).toBe('invalid_api_key');
  });

  it('the fallback bundle answers 405 with Allow on a known path, 404 elsewhere', async () => {
    const wrongMethod = await invokeBundle(stack.fallback, { method: 'POST', path: '/v1/branch' });
    expect(wrongMethod.response.statusCode).toBe(405);
    expect(wrongMethod.response.headers.allow).toBe('GET');
    expect(wrongMethod.json.error.code).toBe('method_not_allowed');
    const unknown = await invokeBundle(stack.fallback, { path: '/v1/nothing-here' });
    expect(unknown.response.statusCode).toBe(404);
    expect(unknown.json.error.code).toBe('not_found');
  });
});
