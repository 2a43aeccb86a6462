/**
 * The one load driver, autocannon, for `npm run bench`, `npm run load` (bench/reliability/) and the
 * reliability tests. `drive` runs a load and returns what autocannon measured; `load` is the
 * bench's: every answer must be 2xx, or the bench measured an error path.
 */
import autocannon from 'autocannon';
import { ENDPOINTS } from './fixtures';

/**
 * Keys a bench load spreads its requests over, each with this limit: the largest one still counted
 * call by call (above it a key counts in blocks and skips counter writes), so every request makes
 * the deployment's four DynamoDB calls, and 4 keys admit 2,000 requests/s.
 */
export const LOAD_KEYS = 4;
export const LOAD_KEY_RATE_LIMIT = '500/s';

/** Every key on every endpoint in turn (or `paths` only). */
export const requestsFor = (baseUrl: string, keys: readonly string[], paths = ENDPOINTS.map((one) => one.path)) => {
  const stage = new URL(baseUrl).pathname;
  return keys.flatMap((key) =>
    paths.map((path) => ({
      method: 'GET' as const,
      path: `${stage}${path}`,
      headers: { authorization: `Bearer ${key}` },
    })),
  );
};

export interface LoadRun {
  connections: number;
  /** Taken in turn; one with its own `onResponse` receives the status, body and headers of each answer. */
  requests: autocannon.Request[];
  /** Headers of every request. */
  headers?: Record<string, string>;
  /** Total requests; without it the run lasts `seconds`. */
  amount?: number;
  /** @default 3 */
  seconds?: number;
  /** Seconds a request may take. @default 10 */
  timeout?: number;
  /** A safety net: the run is stopped after this many seconds, and `stopped` says so. */
  maxSeconds?: number;
  /** Called with each response's count so far. */
  onResponse?: (answered: number) => void;
}

/** Runs the load to its end (or `maxSeconds`): autocannon's result. */
export const drive = (url: string, run: LoadRun): Promise<autocannon.Result & { stopped: boolean }> =>
  new Promise((resolve, reject) => {
    let answered = 0;
    let stopped = false;
    const instance = autocannon(
      {
        url,
        connections: run.connections,
        ...(run.amount ? { amount: run.amount } : { duration: run.seconds ?? 3 }),
        timeout: run.timeout ?? 10,
        ...(run.headers ? { headers: run.headers } : {}),
        requests: run.requests,
      },
      (error, result) => (error ? reject(error) : resolve({ ...result, stopped })),
    );
    if (run.onResponse) instance.on('response', () => run.onResponse!((answered += 1)));
    if (run.maxSeconds !== undefined) {
      const guard = setTimeout(() => {
        stopped = true;
        instance.stop();
      }, run.maxSeconds * 1000);
      instance.on('done', () => clearTimeout(guard));
    }
  });

/** A response header by name, whatever its case (autocannon gives them as the server wrote them). */
export const headerValue = (headers: Record<string, unknown>, name: string): string | undefined => {
  const found = Object.entries(headers).find(([candidate]) => candidate.toLowerCase() === name)?.[1];
  return found === undefined ? undefined : String(found);
};

/** The bench's load: resolves to 2xx answers and seconds, fails on any other answer or error. */
export const load = async (baseUrl: string, run: LoadRun): Promise<{ ok: number; seconds: number }> => {
  const result = await drive(baseUrl, run);
  if (result.errors > 0 || result.non2xx > 0 || (run.amount !== undefined && result['2xx'] !== run.amount)) {
    const statuses = Object.entries(result.statusCodeStats ?? {}).map(([status, one]) => `${one.count} × ${status}`);
    throw new Error(`load on ${baseUrl}: ${statuses.join(', ')}, ${result.errors} errors, ${result.timeouts} timeouts`);
  }
  return { ok: result['2xx'], seconds: result.duration };
};
