/**
 * The cost section of docs/deploy.md (lib/infra/cost.ts): its template inputs are what the
 * synthesized stack says, its measured inputs what lib/infra/cost-inputs.json holds (measured by
 * test/cost-inputs.test.ts and `npm run bench`), its arithmetic follows the stated prices, and the
 * doc is current.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ENDPOINT_MEMORY_MB } from '../../lib/infra/api-function';
import { generatedBlocks } from '../../lib/infra/counts';
import {
  billedMs,
  costInputs,
  MEASURED,
  nativeCost,
  PRICES,
  stackCost,
  streamBatch,
  total,
  VOLUMES,
} from '../../lib/infra/cost';
import { PROJECT_ROOT } from '../../lib/project-paths';
import { tableDefinitions } from '../../shared/data/tables';
import { DEFAULT_USAGE_RETENTION_DAYS } from '../../shared/domain/usage-record';
import { buildStack, resourcesOfType } from './support';

const { template } = buildStack();
const json = template.toJSON();
const inputs = costInputs(json);
const item = (name: string) => stackCost(inputs).find((one) => one.item === name)!;

describe('the inputs', () => {
  it('come from the template', () => {
    const alarms = Object.values(resourcesOfType(template, 'AWS::CloudWatch::Alarm'));
    expect(inputs).toMatchObject({
      endpointMemoryMb: ENDPOINT_MEMORY_MB,
      architecture: 'arm64',
      alarms: alarms.length,
      tables: tableDefinitions.length,
      usageRetentionDays: DEFAULT_USAGE_RETENTION_DAYS,
    });
    expect(inputs.alarmMetrics).toBeGreaterThanOrEqual(inputs.alarms);
  });

  it('are the measured ones, each named with what measured it', () => {
    expect(inputs.measured).toBe(MEASURED);
    const text = generatedBlocks(template).current('docs/deploy.md', readDeployGuide())!;
    expect(text).toContain('measured: `test/cost-inputs.test.ts`');
    expect(text).toContain('measured: `npm run bench`');
    expect(text).toContain(`list prices as of ${PRICES.asOf}`);
  });

  it('follow the template when it changes: more memory costs more duration', () => {
    const bigger = structuredClone(json);
    for (const resource of Object.values<any>(bigger.Resources))
      if (resource.Type === 'AWS::Lambda::Function') resource.Properties.MemorySize *= 2;
    const duration = (lines: ReturnType<typeof stackCost>) => lines.find((l) => l.item === 'Lambda duration')!.dollars;
    expect(duration(stackCost(costInputs(bigger)))[0]).toBeGreaterThan(duration(stackCost(inputs))[0]!);
  });
});

describe('the arithmetic', () => {
  it('charges each request of the HTTP and REST APIs at their price', () => {
    expect(item('API Gateway HTTP API').dollars).toEqual(VOLUMES.map((n) => (n / 1e6) * PRICES.httpApiPerMillion));
    expect(nativeCost(inputs).bare[0]!.dollars).toEqual(VOLUMES.map((n) => (n / 1e6) * PRICES.restApiPerMillion));
  });

  it('DynamoDB writes: the measured units per call and per stream batch, at the write price', () => {
    const sum = (units: Record<string, number>) => Object.values(units).reduce((a, b) => a + b, 0);
    VOLUMES.forEach((n, i) => {
      const batch = streamBatch(inputs, n);
      const perCall = sum(MEASURED.endpoint.writeUnits) + batch.writeUnits / batch.calls;
      expect(item('DynamoDB writes').dollars[i]).toBeCloseTo(
        (n / 1e6) * perCall * PRICES.dynamoWritePerMillionUnits,
        9,
      );
    });
  });

  it('a stream batch holds what arrives within the batching window, at most the batch size', () => {
    const seconds = 30 * 24 * 3600;
    expect(streamBatch(inputs, 1e6).calls).toBeCloseTo((1e6 / seconds) * inputs.batchWindowSeconds, 9);
    expect(streamBatch(inputs, 1e8).calls).toBe(inputs.batchSize);
    expect(streamBatch(inputs, 1e8).writeUnits).toBeGreaterThan(streamBatch(inputs, 1e6).writeUnits);
  });

  it('billed duration: the round trips a call waits for, and its CPU at its share of a vCPU', () => {
    expect(
      billedMs(3, { endpointMemoryMb: 1769, measured: { ...MEASURED, bench: { ...MEASURED.bench, cpuMs: 1 } } }),
    ).toBe(16);
    expect(
      billedMs(1, { endpointMemoryMb: 1769, measured: { ...MEASURED, bench: { ...MEASURED.bench, cpuMs: 1 } } }),
    ).toBe(6);
  });

  it('the alternative with per-call records costs its bare minimum and more', () => {
    const { bare, withRecords } = nativeCost(inputs);
    total(withRecords).forEach((dollars, i) => expect(dollars).toBeGreaterThan(total(bare)[i]!));
  });
});

const readDeployGuide = () => readFileSync(join(PROJECT_ROOT, 'docs', 'deploy.md'), 'utf8');

it('docs/deploy.md holds the current table (npm run docs:counts)', () => {
  const text = readDeployGuide();
  expect(text).toContain('| API Gateway HTTP API');
  expect(generatedBlocks(template).current('docs/deploy.md', text)).toBe(text);
});
