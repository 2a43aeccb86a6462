/**
 * Powertools' debug log sampling through the chain (shared/api/middlewares/request-context.ts):
 * with a sample rate configured, every request draws again, so a sampled request writes its
 * debug lines; with none, the chain skips the draw and the configured level stays.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { buildContext, buildEvent } from '../lib/local/events';
import { createMiddlewareChain } from '../shared/api/middleware-chain';
import { recordUsage, type ApiContext, type ApiMiddleware } from '../shared/api/middlewares';
import type { UsageRecord } from '../shared/domain/usage-record';
import { RequestLogFormatter } from '../shared/lambda/request-log-formatter';
import type { ApiLogger as ApiLoggerType } from '../shared/lambda/observability';

const debugLinesOf = async (debugSampling: boolean | undefined) => {
  // A rate of 1: every draw samples the request, so the outcome is certain.
  const logFields = new RequestLogFormatter();
  const logger = new Logger({ serviceName: 'sampling-test', sampleRateValue: 1, logFormatter: logFields });
  const metrics = new Metrics({ namespace: 'SamplingTest', serviceName: 'sampling-test' });
  const handler = createMiddlewareChain(
    async () => {
      logger.debug('inside the handler');
      return { statusCode: 200, headers: {}, body: '{}' };
    },
    { logger, logFields, metrics, ...(debugSampling === undefined ? {} : { debugSampling }) },
  );
  const lines: string[] = [];
  const spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    lines.push(String(chunk));
    return true;
  });
  try {
    for (let request = 0; request < 3; request += 1) {
      // What a deployer set: INFO. A draw that samples the request lowers it to DEBUG for that request.
      logger.setLogLevel('INFO');
      const res = await handler(buildEvent({ path: '/v1/branch' }), buildContext() as ApiContext);
      expect(res.statusCode).toBe(200);
    }
  } finally {
    spy.mockRestore();
  }
  return lines.filter((line) => line.includes('inside the handler')).length;
};

it('draws the debug sample on every request when sampling is configured (the default)', async () => {
  // Every request after the first draws (Powertools may skip the first refresh after its own draw at start-up).
  expect(await debugLinesOf(undefined)).toBeGreaterThanOrEqual(2);
  expect(await debugLinesOf(true)).toBeGreaterThanOrEqual(2);
});

it('leaves the configured level alone when the chain is told there is no sampling', async () => {
  expect(await debugLinesOf(false)).toBe(0);
});

it('knows sampling is configured from POWERTOOLS_LOGGER_SAMPLE_RATE, as Powertools does', async () => {
  const sampled = async (rate: string | undefined) => {
    const saved = process.env.POWERTOOLS_LOGGER_SAMPLE_RATE;
    if (rate === undefined) delete process.env.POWERTOOLS_LOGGER_SAMPLE_RATE;
    else process.env.POWERTOOLS_LOGGER_SAMPLE_RATE = rate;
    try {
      let value: boolean | undefined;
      await jest.isolateModulesAsync(async () => {
        ({ debugSampling: value } = await import('../shared/lambda/observability'));
      });
      return value;
    } finally {
      if (saved === undefined) delete process.env.POWERTOOLS_LOGGER_SAMPLE_RATE;
      else process.env.POWERTOOLS_LOGGER_SAMPLE_RATE = saved;
    }
  };
  expect(await sampled('0.1')).toBe(true);
  expect(await sampled('0')).toBe(false);
  expect(await sampled(undefined)).toBe(false);
});

describe('whether a debug line is possible at all (ApiLogger, shared/lambda/observability.ts)', () => {
  const apiLogger = async () => {
    let made: typeof ApiLoggerType | undefined;
    await jest.isolateModulesAsync(async () => {
      ({ ApiLogger: made } = await import('../shared/lambda/observability'));
    });
    return made!;
  };

  it('is not while no level at or below DEBUG has been in effect, and is ever after one has', async () => {
    const ApiLogger = await apiLogger();
    const logger = new ApiLogger({ serviceName: 'debug-test', logLevel: 'INFO' });
    expect(logger.mayLogDebug).toBe(false);
    logger.setLogLevel('WARN');
    expect(logger.mayLogDebug).toBe(false);
    logger.setLogLevel('DEBUG');
    expect(logger.mayLogDebug).toBe(true);
    // Another invocation may still be at DEBUG: the answer stays, and the level itself decides.
    logger.setLogLevel('INFO');
    expect(logger.mayLogDebug).toBe(true);
    expect(new ApiLogger({ serviceName: 'debug-test', logLevel: 'DEBUG' }).mayLogDebug).toBe(true);
    expect(new ApiLogger({ serviceName: 'debug-test', logLevel: 'TRACE' }).mayLogDebug).toBe(true);
  });

  it('is, from the start, for a logger whose first sample draw lowered it to DEBUG', async () => {
    const ApiLogger = await apiLogger();
    const logger = new ApiLogger({ serviceName: 'debug-test', logLevel: 'INFO', sampleRateValue: 1 });
    expect(logger.level).toBe(8);
    expect(logger.mayLogDebug).toBe(true);
  });

  it('gives each usage record its "Usage recorded" line once the level is lowered at run time', async () => {
    const ApiLogger = await apiLogger();
    const logFields = new RequestLogFormatter();
    const logger = new ApiLogger({ serviceName: 'debug-test', logLevel: 'INFO', logFormatter: logFields });
    const metrics = new Metrics({ namespace: 'DebugTest', serviceName: 'debug-test' });
    // The usage store is a list here: this test is about the log line, not the write (test/usage-records.test.ts).
    const recorded: UsageRecord[] = [];
    const usage = { put: async (record: UsageRecord) => void recorded.push(record) };
    const knownKey: ApiMiddleware = {
      before: ({ context }) => {
        context.apiKey = { key_id: 'key-1', branch_id: 'branch-1' } as ApiContext['apiKey'];
      },
    };
    const handler = createMiddlewareChain(async () => ({ statusCode: 200, headers: {}, body: '{}' }), {
      logger,
      logFields,
      metrics,
      debugSampling: false,
      guards: [knownKey],
      observers: [recordUsage({ usage, logger, metrics })],
    });
    const lines: string[] = [];
    const spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      lines.push(String(chunk));
      return true;
    });
    try {
      await handler(buildEvent({ path: '/v1/branch' }), buildContext() as ApiContext);
      logger.setLogLevel('DEBUG');
      await handler(buildEvent({ path: '/v1/branch' }), buildContext() as ApiContext);
    } finally {
      spy.mockRestore();
    }
    expect(recorded).toHaveLength(2);
    const usageLines = lines.filter((line) => line.includes('"Usage recorded"'));
    expect(usageLines).toHaveLength(1);
    expect(usageLines[0]).toContain(recorded[1]!.request_id);
  });
});
