/**
 * The service's logger (shared/lambda/api-logger.ts) hands a request's Lambda context to
 * Powertools only when a line is logged, where Powertools keeps one context for the environment.
 * A line must carry exactly what it carried when the context was set at once: its own request's
 * context, and `cold_start` on the environment's first request only, whether that one logged or not.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { buildContext } from '../lib/local/events';
import { invokeFunction } from '../lib/local/invoke';
import { ApiLogger } from '../shared/lambda/api-logger';
import { captureLogs } from './support/harness';

const saved = process.env.AWS_LAMBDA_INITIALIZATION_TYPE;
// Powertools marks a cold start only for on-demand environments.
beforeAll(() => (process.env.AWS_LAMBDA_INITIALIZATION_TYPE = 'on-demand'));
afterAll(() => {
  if (saved === undefined) delete process.env.AWS_LAMBDA_INITIALIZATION_TYPE;
  else process.env.AWS_LAMBDA_INITIALIZATION_TYPE = saved;
});

/** The lines `logger` writes for requests made in turn, each with a new Lambda context; `logs[i]` says whether request i logs. */
const linesOf = (logger: Logger, logs: boolean[]) => {
  const contexts = logs.map(() => buildContext('logger-test'));
  const captured = captureLogs(logger, 'INFO');
  try {
    logs.forEach((logsOne, at) => {
      logger.addContext(contexts[at]!);
      if (logsOne) logger.info(`request ${at}`);
    });
  } finally {
    captured.restore();
  }
  return captured.entries.map((line) => ({
    message: line.message,
    own: line.function_request_id === contexts[Number(String(line.message).split(' ')[1])]!.awsRequestId,
    cold_start: line.cold_start,
  }));
};

const make = () => ({
  ours: new ApiLogger({ serviceName: 'logger-test', logLevel: 'INFO' }),
  powertools: new Logger({ serviceName: 'logger-test', logLevel: 'INFO' }),
});

it.each([
  ['the first request logs', [true, true, false, true]],
  ['the first request logs nothing', [false, true, true]],
  ['no request logs but the last', [false, false, false, true]],
])('gives each line its own request and the cold start its own mark, as Powertools does, when %s', (_, logs) => {
  const { ours, powertools } = make();
  const lines = linesOf(ours, logs);
  expect(lines).toEqual(linesOf(powertools, logs));
  expect(lines.length).toBe(logs.filter(Boolean).length);
  for (const line of lines) expect(line.own).toBe(true);
  expect(lines.map((line) => line.cold_start)).toEqual(lines.map((line) => line.message === 'request 0'));
});

it('sets the context at once inside invocations that Powertools keeps apart (lib/local/invoke.ts)', async () => {
  const { ours } = make();
  const contexts = [buildContext('logger-test'), buildContext('logger-test')];
  let releaseFirst!: () => void;
  const firstWaits = new Promise<void>((resolve) => (releaseFirst = resolve));
  const captured = captureLogs(ours, 'INFO');
  try {
    await Promise.all(
      contexts.map((context, at) =>
        invokeFunction(
          async () => {
            ours.addContext(context);
            // The first logs only after the second has set its context and logged.
            if (at === 0) await firstWaits;
            ours.info(`request ${at}`);
            if (at === 1) releaseFirst();
          },
          {},
          context,
        ),
      ),
    );
  } finally {
    captured.restore();
  }
  expect(captured.entries.map((line) => [line.message, line.function_request_id])).toEqual([
    ['request 1', contexts[1]!.awsRequestId],
    ['request 0', contexts[0]!.awsRequestId],
  ]);
});

it('gives a child logger the Lambda context of the request it was made in', () => {
  const { ours } = make();
  const context = buildContext('logger-test');
  ours.addContext(context);
  const child = ours.createChild({ serviceName: 'logger-test-child' });
  const captured = captureLogs(child, 'INFO');
  try {
    child.info('from the child');
  } finally {
    captured.restore();
  }
  expect(captured.entries).toEqual([
    expect.objectContaining({ message: 'from the child', function_request_id: context.awsRequestId }),
  ]);
});
