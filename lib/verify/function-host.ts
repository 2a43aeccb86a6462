/**
 * One deployed function, running here: a child process with exactly the template's environment
 * (plus what Lambda itself provides, and a DynamoDB endpoint that records its calls), importing the
 * asset code with the template's handler string. Its stdout is its log: EMF metric lines are read
 * from it as CloudWatch would.
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import pLimit from 'p-limit';
import { parseBody } from '../local/change-capture';
import { buildContext } from '../local/events';
import { LOCAL_ACCOUNT, LOCAL_REGION, type Json, type TemplateFunction } from './assembly';
import { startRecordingProxy } from './recording-proxy';

const RUNNER = join(import.meta.dirname, 'function-runner.mjs');

export interface EmittedMetric {
  namespace: string;
  name: string;
  dimensions: Record<string, string>;
}

interface InvokeOutcome {
  result?: unknown;
  /** Set when the handler threw (Lambda would report a function error). */
  error?: string;
}

/** One function's process and its recording proxy (`importError`: the code could not be imported). */
export type FunctionHost = Awaited<ReturnType<typeof startFunction>>;

/** Metrics declared by one EMF log line (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html). */
const metricsOfLine = (line: string): EmittedMetric[] => {
  const entry: Json = parseBody(line);
  const directives = entry?._aws?.CloudWatchMetrics;
  if (!Array.isArray(directives)) return [];
  return directives.flatMap((directive: Json) =>
    (directive.Metrics ?? []).flatMap((metric: { Name: string }) =>
      (directive.Dimensions ?? [[]]).map((set: string[]) => ({
        namespace: String(directive.Namespace),
        name: metric.Name,
        dimensions: Object.fromEntries(set.map((name) => [name, String(entry[name])])),
      })),
    ),
  );
};

/** The call bound of the functions here (shared/config/env.ts): the embedded DynamoDB shares a possibly loaded machine. */
export const EMBEDDED_DYNAMODB_DEADLINE_MS = 8000;

/** Exactly what Lambda gives the function: its runtime's variables, then the template's own. */
const environmentOf = (fn: TemplateFunction, dynamoEndpoint: string, eventsEndpoint?: string) => ({
  PATH: process.env.PATH ?? '',
  // What the Lambda runtime sets.
  AWS_REGION: LOCAL_REGION,
  AWS_DEFAULT_REGION: LOCAL_REGION,
  AWS_LAMBDA_FUNCTION_NAME: fn.logicalId,
  AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
  AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(fn.memorySize),
  AWS_EXECUTION_ENV: `AWS_Lambda_${fn.runtime}`,
  AWS_LAMBDA_LOG_GROUP_NAME: `/aws/lambda/${fn.logicalId}`,
  AWS_LAMBDA_LOG_STREAM_NAME: 'verify',
  AWS_LAMBDA_INITIALIZATION_TYPE: 'on-demand',
  LAMBDA_TASK_ROOT: fn.codeDir,
  _HANDLER: fn.handler,
  // Lambda's clock and locale: code that formats dates or text is seen as it will run there.
  TZ: ':UTC',
  LANG: 'en_US.UTF-8',
  AWS_ACCESS_KEY_ID: 'verify',
  AWS_SECRET_ACCESS_KEY: 'verify',
  AWS_SESSION_TOKEN: 'verify',
  // The template's own variables; an unresolvable one is left out (and reported by the caller).
  ...Object.fromEntries(
    Object.entries(fn.environment).filter((pair): pair is [string, string] => pair[1] !== undefined),
  ),
  // The additions: DynamoDB is the recording proxy in front of the embedded one, and its calls get
  // a deadline a busy machine keeps: what is verified is the wiring, not the embedded store's speed.
  DYNAMODB_ENDPOINT: dynamoEndpoint,
  DYNAMODB_DEADLINE_MS: String(EMBEDDED_DYNAMODB_DEADLINE_MS),
  // Key events go to the run's stand-in bus (lib/verify/event-bus.ts), not to AWS.
  ...(eventsEndpoint ? { AWS_ENDPOINT_URL_EVENTBRIDGE: eventsEndpoint } : {}),
});

/** The Lambda context object of one invocation (its methods are the runner's: IPC carries no function). */
const contextOf = (fn: TemplateFunction) => ({
  ...buildContext(fn.logicalId),
  invokedFunctionArn: `arn:aws:lambda:${LOCAL_REGION}:${LOCAL_ACCOUNT}:function:${fn.logicalId}`,
  memoryLimitInMB: String(fn.memorySize),
});

/**
 * @param streamed tables with a stream (name → key attribute names), whose changes the proxy captures.
 * @param eventsEndpoint where the function's EventBridge client sends (AWS_ENDPOINT_URL_EVENTBRIDGE)
 */
export const startFunction = async (
  fn: TemplateFunction,
  dynamoEndpoint: string,
  streamed?: ReadonlyMap<string, readonly string[]>,
  eventsEndpoint?: string,
) => {
  const proxy = await startRecordingProxy(dynamoEndpoint, streamed);
  const child = fork(RUNNER, [fn.codeDir, fn.handler, String(fn.timeoutSeconds)], {
    env: environmentOf(fn, proxy.endpoint, eventsEndpoint),
    execArgv: [],
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  const exited = new Promise<string>((resolve) =>
    child.once('exit', (code) => resolve(`the process exited with code ${code}`)),
  );
  /** The runner's next message: it answers each message it is sent, one at a time. */
  const answer = (): Promise<Json> =>
    Promise.race([
      once(child, 'message').then(([message]) => message as Json),
      exited.then((message) => ({ type: 'error', message })),
    ]);
  // Its stdout is its log, read as CloudWatch reads one: line by line, keeping the EMF metrics.
  const metrics: EmittedMetric[] = [];
  createInterface({ input: child.stdout! }).on('line', (line) => metrics.push(...metricsOfLine(line)));
  child.stderr!.resume();
  const ready = await answer();
  const importError = ready.type === 'ready' ? undefined : String(ready.message);
  /** An answer later than the Timeout is an error: Lambda would have stopped the function before it. */
  const invokeOnce = async (event: unknown): Promise<InvokeOutcome> => {
    if (importError || !child.connected) return { error: importError ?? (await exited) };
    host.invocations += 1;
    const started = performance.now();
    child.send({ event, context: contextOf(fn) });
    const message = await answer();
    const seconds = (performance.now() - started) / 1000;
    if (message.type === 'error') return { error: String(message.message) };
    return seconds > fn.timeoutSeconds
      ? { error: `ran ${seconds.toFixed(1)} s, longer than its Timeout of ${fn.timeoutSeconds} s` }
      : { result: message.result };
  };
  // One invocation at a time, as one Lambda execution environment serves them.
  const oneAtATime = pLimit(1);
  const host = {
    fn,
    proxy,
    metrics,
    invocations: 0,
    importError,
    invoke: (event: unknown) => oneAtATime(() => invokeOnce(event)),
    // The process first (its pending retries and timers end with it), then its proxy drains.
    close: async () => {
      child.kill();
      await exited;
      await proxy.close();
    },
  };
  return host;
};
