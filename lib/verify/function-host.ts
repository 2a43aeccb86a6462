/**
 * One deployed function, running here: a child process with exactly the template's environment
 * (plus what Lambda itself provides, and a DynamoDB endpoint that records its calls), importing the
 * asset code with the template's handler string. Its stdout is its log: EMF metric lines are read
 * from it as CloudWatch would.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { LOCAL_ACCOUNT, LOCAL_REGION, type Json, type TemplateFunction } from './assembly';
import { startRecordingProxy, type RecordingProxy } from './recording-proxy';

const RUNNER = join(import.meta.dirname, 'function-runner.mjs');

export interface EmittedMetric {
  namespace: string;
  name: string;
  dimensions: Record<string, string>;
}

export interface InvokeOutcome {
  result?: unknown;
  /** Set when the handler threw (Lambda would report a function error). */
  error?: string;
}

export interface FunctionHost {
  fn: TemplateFunction;
  proxy: RecordingProxy;
  /** Set when the code could not be imported (a missing variable, a bad handler string). */
  importError?: string;
  metrics: EmittedMetric[];
  invocations: number;
  invoke(event: unknown): Promise<InvokeOutcome>;
  close(): Promise<void>;
}

/** Metrics declared by one EMF log line (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html). */
export const metricsOfLine = (line: string): EmittedMetric[] => {
  let entry: Json;
  try {
    entry = JSON.parse(line);
  } catch {
    return [];
  }
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
const environmentOf = (
  fn: TemplateFunction,
  dynamoEndpoint: string,
  eventsEndpoint?: string,
): Record<string, string> => ({
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

/** The Lambda context object of one invocation. */
const contextOf = (fn: TemplateFunction, id: string) => ({
  awsRequestId: id,
  functionName: fn.logicalId,
  functionVersion: '$LATEST',
  invokedFunctionArn: `arn:aws:lambda:${LOCAL_REGION}:${LOCAL_ACCOUNT}:function:${fn.logicalId}`,
  memoryLimitInMB: String(fn.memorySize),
  logGroupName: `/aws/lambda/${fn.logicalId}`,
  logStreamName: 'verify',
  callbackWaitsForEmptyEventLoop: false,
});

/** Reads the child's stdout as CloudWatch reads a log: line by line, keeping the EMF metrics. */
const collectMetrics = (child: ChildProcess, metrics: EmittedMetric[]) => {
  let buffered = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    buffered += chunk.toString('utf8');
    const lines = buffered.split('\n');
    buffered = lines.pop() ?? '';
    for (const line of lines) metrics.push(...metricsOfLine(line));
  });
  child.stderr?.resume();
};

type Settle = (outcome: InvokeOutcome) => void;

/** Resolves once the code is imported (or failed to be); routes each answer to its pending invocation. */
const whenReady = (child: ChildProcess, host: FunctionHost, pending: Map<string, Settle>) =>
  new Promise<void>((resolve) => {
    child.on('message', (message: Json) => {
      if (message.type === 'ready') resolve();
      else if (message.type === 'import-failed') {
        host.importError = message.message;
        resolve();
      } else
        pending.get(message.id)?.(message.type === 'error' ? { error: message.message } : { result: message.result });
    });
    child.on('exit', (code) => {
      host.importError ??= `the process exited with code ${code} before it was ready`;
      resolve();
      for (const settle of pending.values()) settle({ error: `the process exited with code ${code}` });
    });
  });

/** Invokes the handler in the child once; an answer later than the Timeout is an error, as on Lambda. */
const invoker =
  (child: ChildProcess, host: FunctionHost, pending: Map<string, Settle>) =>
  (event: unknown): Promise<InvokeOutcome> =>
    new Promise<InvokeOutcome>((resolve) => {
      const { fn } = host;
      if (host.importError) return resolve({ error: host.importError });
      const id = randomUUID();
      host.invocations += 1;
      const started = performance.now();
      pending.set(id, (outcome) => {
        pending.delete(id);
        const seconds = (performance.now() - started) / 1000;
        // Lambda would have stopped it: its answer would never have been seen.
        resolve(
          seconds > fn.timeoutSeconds && !outcome.error
            ? { error: `ran ${seconds.toFixed(1)} s, longer than its Timeout of ${fn.timeoutSeconds} s` }
            : outcome,
        );
      });
      child.send({ id, event, context: contextOf(fn, id) });
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
): Promise<FunctionHost> => {
  const proxy = await startRecordingProxy(dynamoEndpoint, streamed);
  const child: ChildProcess = fork(RUNNER, [fn.codeDir, fn.handler, String(fn.timeoutSeconds)], {
    env: environmentOf(fn, proxy.endpoint, eventsEndpoint),
    execArgv: [],
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  const host: FunctionHost = {
    fn,
    proxy,
    metrics: [],
    invocations: 0,
    invoke: async () => ({ error: 'not started' }),
    close: async () => undefined,
  };
  collectMetrics(child, host.metrics);
  const pending = new Map<string, Settle>();
  await whenReady(child, host, pending);
  host.invoke = invoker(child, host, pending);
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  // The process first (its pending retries and timers end with it), then its proxy drains.
  host.close = async () => {
    child.kill();
    await exited;
    await proxy.close();
  };
  return host;
};
