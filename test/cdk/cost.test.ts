/**
 * The cost section of docs/deploy.md (lib/infra/cost.ts): its inputs are what the synthesized
 * template and the route table say, its arithmetic follows the stated prices, and the doc is current.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ENDPOINT_MEMORY_MB } from '../../lib/infra/api-function';
import { EPHEMERAL_TABLES } from '../../lib/infra/data-tables';
import { generatedBlocks } from '../../lib/infra/counts';
import { costInputs, nativeCost, PRICES, stackCost, VOLUMES } from '../../lib/infra/cost';
import { PROJECT_ROOT } from '../../lib/project-paths';
import { routes, tableAccessOf } from '../../shared/api/routes';
import { tableDefinitions } from '../../shared/data/tables';
import { DEFAULT_USAGE_RETENTION_DAYS } from '../../shared/domain/usage-record';
import { buildStack, resourcesOfType } from './support';

const { template } = buildStack();
const json = template.toJSON();
const inputs = costInputs(json);

describe('the inputs', () => {
  it('come from the template', () => {
    const alarms = Object.values(resourcesOfType(template, 'AWS::CloudWatch::Alarm'));
    expect(inputs).toMatchObject({
      endpointMemoryMb: ENDPOINT_MEMORY_MB,
      architecture: 'arm64',
      alarms: alarms.length,
      tables: tableDefinitions.length,
      pitrTables: tableDefinitions.length - EPHEMERAL_TABLES.length,
      usageRetentionDays: DEFAULT_USAGE_RETENTION_DAYS,
    });
    // A metric-math alarm (a rate, a table's read and write throttles) is billed per metric.
    expect(inputs.alarmMetrics).toBeGreaterThan(inputs.alarms);
  });

  it("are the DynamoDB calls each route declares (test/dynamodb-calls.test.ts holds them to the handlers')", () => {
    for (const route of routes) {
      expect(tableAccessOf(route).reduce((sum, access) => sum + access.actions.length, 0)).toBe(inputs.callsPerRequest);
    }
    expect(inputs.callsPerRequest).toBe(4);
    // The key lookup (strongly consistent, 1 unit) and the branch data read (0.5).
    expect(inputs.readUnitsPerCall).toBe(1.5);
    // The rate-limit counter (1) and the usage record written to the table and its by-key index (2).
    expect(inputs.writeUnitsPerCall).toBe(3);
  });

  it('follow the template when it changes: more memory costs more duration', () => {
    const bigger = structuredClone(json);
    for (const resource of Object.values<any>(bigger.Resources))
      if (resource.Type === 'AWS::Lambda::Function') resource.Properties.MemorySize *= 2;
    const duration = (lines: ReturnType<typeof stackCost>) => lines.find((l) => l.item === 'Lambda duration')!.dollars;
    expect(duration(stackCost(costInputs(bigger)))[0]).toBeCloseTo(2 * duration(stackCost(inputs))[0]!, 6);
  });
});

describe('the arithmetic', () => {
  it('charges each request of the HTTP and REST APIs at their price', () => {
    expect(stackCost(inputs)[0]!.dollars).toEqual(VOLUMES.map((n) => (n / 1e6) * PRICES.httpApiPerMillion));
    expect(nativeCost(inputs)[0]!.dollars).toEqual(VOLUMES.map((n) => (n / 1e6) * PRICES.restApiPerMillion));
  });

  it('DynamoDB writes: 3 units per call and 2 per stream batch', () => {
    const writes = stackCost(inputs).find((line) => line.item === 'DynamoDB writes')!;
    expect(writes.dollars[0]).toBeCloseTo(((1e6 * 3 + (1e6 / inputs.streamBatchSize) * 2) / 1e6) * 0.625, 9);
  });
});

it('docs/deploy.md holds the current table (npm run docs:counts)', () => {
  const text = readFileSync(join(PROJECT_ROOT, 'docs', 'deploy.md'), 'utf8');
  expect(text).toContain('| API Gateway HTTP API');
  expect(generatedBlocks(template).current('docs/deploy.md', text)).toBe(text);
});
