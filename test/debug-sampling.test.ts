/**
 * Powertools' debug log sampling through the chain (shared/api/middlewares/request-context.ts):
 * with a sample rate configured, every request draws again, so a sampled request writes its
 * debug lines; with none, the chain skips the draw and the configured level stays.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { buildContext, buildEvent } from '../lib/local/events';
import { createMiddlewareChain } from '../shared/api/middleware-chain';
import type { ApiContext } from '../shared/api/middlewares';
import { RequestLogFormatter } from '../shared/lambda/request-log-formatter';

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
