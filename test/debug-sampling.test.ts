/**
 * Powertools' debug log sampling through the chain (injectLambdaContext, shared/api/middleware-chain.ts):
 * with a sample rate configured, every request draws again, so a sampled request writes its debug
 * lines; with none, the configured level stays.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { buildContext, buildEvent } from '../lib/local/events';
import { createMiddlewareChain } from '../shared/api/middleware-chain';
import { recordUsage, type ApiContext, type ApiMiddleware } from '../shared/api/middlewares';
import type { UsageRecord } from '../shared/domain/usage-record';

/** What the chain writes to stdout over `requests` requests, the handler logging one debug line each. */
const linesOf = async (
  logger: Logger,
  requests: number,
  observers: ApiMiddleware[] = [],
  guards: ApiMiddleware[] = [],
) => {
  const metrics = new Metrics({ namespace: 'SamplingTest', serviceName: 'sampling-test' });
  const handler = createMiddlewareChain(
    async () => {
      logger.debug('inside the handler');
      return { statusCode: 200, headers: {}, body: '{}' };
    },
    { logger, metrics, guards, observers },
  );
  const lines: string[] = [];
  const spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    lines.push(String(chunk));
    return true;
  });
  try {
    for (let request = 0; request < requests; request += 1) {
      const res = await handler(buildEvent({ path: '/v1/branch' }), buildContext() as ApiContext);
      expect(res.statusCode).toBe(200);
    }
  } finally {
    spy.mockRestore();
  }
  return lines;
};

const debugLines = (lines: string[]) => lines.filter((line) => line.includes('inside the handler')).length;

it('draws the debug sample on every request when a sample rate is configured', async () => {
  // A rate of 1: every draw samples the request, so the outcome is certain.
  const logger = new Logger({ serviceName: 'sampling-test', logLevel: 'INFO', sampleRateValue: 1 });
  // Every request after the first draws (Powertools may skip the first refresh after its own draw at start-up).
  expect(debugLines(await linesOf(logger, 3))).toBeGreaterThanOrEqual(2);
});

it('keeps the configured level when no sample rate is configured', async () => {
  expect(debugLines(await linesOf(new Logger({ serviceName: 'sampling-test', logLevel: 'INFO' }), 3))).toBe(0);
});

it('reads the sample rate from POWERTOOLS_LOGGER_SAMPLE_RATE for the service logger', async () => {
  const saved = process.env.POWERTOOLS_LOGGER_SAMPLE_RATE;
  process.env.POWERTOOLS_LOGGER_SAMPLE_RATE = '1';
  try {
    let logger: Logger | undefined;
    await jest.isolateModulesAsync(async () => {
      ({ logger } = await import('../shared/lambda/observability'));
    });
    logger!.setLogLevel('INFO');
    expect(debugLines(await linesOf(logger!, 3))).toBeGreaterThanOrEqual(2);
  } finally {
    if (saved === undefined) delete process.env.POWERTOOLS_LOGGER_SAMPLE_RATE;
    else process.env.POWERTOOLS_LOGGER_SAMPLE_RATE = saved;
  }
});

it('gives each usage record its "Usage recorded" line at DEBUG, and none at INFO', async () => {
  const usageLinesAt = async (logLevel: 'DEBUG' | 'INFO') => {
    const logger = new Logger({ serviceName: 'debug-test', logLevel });
    const metrics = new Metrics({ namespace: 'DebugTest', serviceName: 'debug-test' });
    // The usage store is a list here: this test is about the log line, not the write (test/usage-records.test.ts).
    const recorded: UsageRecord[] = [];
    const usage = { put: async (record: UsageRecord) => void recorded.push(record) };
    const knownKey: ApiMiddleware = {
      before: ({ context }) => {
        context.apiKey = { key_id: 'key-1', branch_id: 'branch-1' } as ApiContext['apiKey'];
      },
    };
    const lines = await linesOf(logger, 2, [recordUsage({ usage, logger, metrics })], [knownKey]);
    expect(recorded).toHaveLength(2);
    return { recorded, lines: lines.filter((line) => line.includes('"Usage recorded"')) };
  };
  expect((await usageLinesAt('INFO')).lines).toHaveLength(0);
  const { recorded, lines } = await usageLinesAt('DEBUG');
  expect(lines).toHaveLength(2);
  expect(lines[1]).toContain(recorded[1]!.request_id);
});
