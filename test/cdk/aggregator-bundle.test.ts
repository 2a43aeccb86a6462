/**
 * The rollups aggregator as deployed: the stack synthesized with bundling on, the aggregator's
 * `index.mjs` checked for size, then run as Lambda runs it (a fresh Node process, the function's
 * environment from the template with this file's rollups table in place of the reference) on a
 * DynamoDB stream event, against the embedded DynamoDB; the same event twice counts once.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Asset } from 'aws-cdk-lib/aws-s3-assets';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { BUNDLE_BUDGET_BYTES } from '../../lib/infra/api-function';
import { BranchApiStack } from '../../lib/infra/branch-api-stack';
import { streamEvent, usageChange } from '../../lib/local/stream-events';
import { ensureTables } from '../../lib/operator/tables';
import { RollupsRepository } from '../../shared/data/repositories/rollups';
import { totalsOf } from '../../shared/domain/rollups';
import { fixtureClient } from '../support/harness';
import { logicalId, newApp } from './support';

const MARK = '@@RESULT@@';
const RUNNER = `
let input = '';
for await (const chunk of process.stdin) input += chunk;
const { handler } = await import(process.argv.at(-1));
const context = { awsRequestId: 'bundle-test', functionName: 'aggregate', functionVersion: '$LATEST', memoryLimitInMB: '512', getRemainingTimeInMillis: () => 30000 };
process.stdout.write('\\n${MARK}' + JSON.stringify(await handler(JSON.parse(input), context)) + '\\n');
`;
const rollupsTable = process.env.ROLLUPS_TABLE!;
let outdir: string;
let bundle: string;
let environment: Record<string, string>;

beforeAll(async () => {
  outdir = mkdtempSync(path.join(tmpdir(), 'branch-api-aggregator-'));
  const app = newApp({ bundle: true, outdir });
  const stack = new BranchApiStack(app, 'Bundled');
  app.synth();
  const fn = stack.usageAggregation.function.function;
  bundle = path.join(outdir, (fn.node.findChild('Code') as Asset).assetPath, 'index.mjs');
  const template = JSON.parse(readFileSync(path.join(outdir, 'Bundled.template.json'), 'utf8'));
  const variables: Record<string, unknown> = template.Resources[logicalId(fn)].Properties.Environment.Variables;
  environment = Object.fromEntries(
    Object.entries(variables).map(([name, value]) => [
      name,
      typeof value === 'string'
        ? value
        : (value as { Ref?: string }).Ref === logicalId(stack.tables.rollups)
          ? rollupsTable
          : `unresolved ${JSON.stringify(value)}`,
    ]),
  );
  await ensureTables(fixtureClient, { rollups: rollupsTable });
}, 90_000);
afterAll(() => rmSync(outdir, { recursive: true, force: true }));

const run = (event: DynamoDBStreamEvent) =>
  new Promise<unknown>((resolve, reject) => {
    const child = execFile(
      process.execPath,
      ['--input-type=module', '-e', RUNNER, pathToFileURL(bundle).href],
      {
        env: {
          PATH: process.env.PATH,
          AWS_REGION: 'local',
          AWS_ACCESS_KEY_ID: 'bundle-test',
          AWS_SECRET_ACCESS_KEY: 'bundle-test',
          DYNAMODB_ENDPOINT: process.env.DYNAMODB_ENDPOINT,
          ...environment,
        },
        timeout: 20_000,
      },
      (error, stdout, stderr) => {
        const line = stdout.split('\n').find((candidate) => candidate.startsWith(MARK));
        if (error || !line) return reject(new Error(`bundle failed: ${error?.message}\n${stderr}\n${stdout}`));
        resolve(JSON.parse(line.slice(MARK.length)));
      },
    );
    child.stdin?.end(JSON.stringify(event));
  });

it('is a minified ESM bundle within the budget, reading only the rollups table from its environment', () => {
  expect(statSync(bundle).size).toBeLessThanOrEqual(BUNDLE_BUDGET_BYTES);
  expect(readFileSync(bundle, 'utf8')).toMatch(/^\/\/# sourceMappingURL=index\.mjs\.map$/m);
  expect(Object.keys(environment).filter((name) => name.endsWith('_TABLE'))).toEqual(['ROLLUPS_TABLE']);
});

it('aggregates a stream batch, and the same batch again counts nothing twice', async () => {
  const calls = Array.from({ length: 5 }, (_, i) => ({
    branch_id: 'br_bundle',
    key_id: 'key_bundle',
    method: 'GET',
    path: '/api/v1/branch',
    route: 'GET /v1/branch',
    status: i === 0 ? 500 : 200,
    response_time_ms: 4,
    timestamp: `2027-03-01T10:0${i}:00.000Z`,
    request_id: `bundle-${i}`,
  }));
  const event = streamEvent(
    calls.map((call, i) => usageChange(call, i + 1)),
    'arn:aws:dynamodb:local:000000000000:table/usage',
  );
  expect(await run(event)).toEqual({ batchItemFailures: [] });
  expect(await run(event)).toEqual({ batchItemFailures: [] });
  const hours = await new RollupsRepository(fixtureClient, rollupsTable).hours({
    branchId: 'br_bundle',
    fromHour: '2027-03-01T10:00:00.000Z',
    toHour: '2027-03-01T10:00:00.000Z',
  });
  expect(totalsOf(hours)).toMatchObject({ calls: 5, by_status_class: { '2xx': 4, '5xx': 1 } });
});
