/** Load with autocannon: every request must answer 200, or the bench measured an error path. */
import autocannon from 'autocannon';
import { ENDPOINTS } from './fixtures';

/**
 * Keys a load spreads its requests over, each with this limit: the largest one still counted
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
  requests: ReturnType<typeof requestsFor>;
  amount?: number;
  seconds?: number;
  /** Called with each response's count so far. */
  onResponse?: (answered: number) => void;
}

/** Runs the load; resolves to 2xx answers and seconds, fails on any other answer or error. */
export const load = async (baseUrl: string, run: LoadRun): Promise<{ ok: number; seconds: number }> => {
  let answered = 0;
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const options = {
      url: baseUrl,
      connections: run.connections,
      ...(run.amount ? { amount: run.amount } : { duration: run.seconds ?? 3 }),
      timeout: 10,
      requests: run.requests,
    };
    const instance = autocannon(options, (error, done) => (error ? reject(error) : resolve(done)));
    if (run.onResponse) instance.on('response', () => run.onResponse!((answered += 1)));
  });
  if (result.errors > 0 || result.non2xx > 0 || (run.amount !== undefined && result['2xx'] !== run.amount)) {
    const statuses = Object.entries(result.statusCodeStats ?? {}).map(([status, one]) => `${one.count} × ${status}`);
    throw new Error(`load on ${baseUrl}: ${statuses.join(', ')}, ${result.errors} errors, ${result.timeouts} timeouts`);
  }
  return { ok: result['2xx'], seconds: result.duration };
};
