/**
 * The local stack's own ceiling (docs/capacity.md "Local stack"): `npm start`'s composition in a
 * child (bench/children/local-stack.ts), driven by autocannon from this process at concurrency 16
 * on GET /v1/branch with BENCH_KEYS keys in turn (bench/lib/fixtures.ts). After a warm-up, 20,000 requests in batches; after each,
 * the child waits until the change feed has delivered every usage record to the rollups (so the
 * rate is one that keeps rollups current), forces a GC and reports RSS and CPU time.
 */
import autocannon from 'autocannon';
import { startChild } from './lib/child';
import { round } from './lib/stats';

interface Ready {
  baseUrl: string;
  /** Keys counted call by call (bench/children/local-stack.ts); the load takes them in turn. */
  keys: string[];
}
/** process.memoryUsage() once the stack is idle, CPU time so far, usage records the feed delivered. */
type Sample = NodeJS.MemoryUsage & {
  cpuMicros: number;
  delivered: number;
  /** Committed bytes of V8's young and old generations. */
  generations: { young: number; old: number };
  /** RSS after a forced GC as the load ended. */
  rssAtLoadEnd: number;
};

const settings = {
  warmup: Number(process.env.BENCH_LOCAL_WARMUP ?? 2_000),
  requests: Number(process.env.BENCH_LOCAL_REQUESTS ?? 20_000),
  batches: 4,
  connections: 16,
};

const mb = (bytes: number) => round(bytes / 1024 / 1024, 1);

export const runLocalStack = async () => {
  // BENCH_LOCAL_NODE_ARGS: Node flags to compare settings.
  const nodeArgs = (process.env.BENCH_LOCAL_NODE_ARGS ?? '').split(' ').filter(Boolean);
  // The child gets PATH and HOME only (bench/lib/child.ts): pass on the settings meant for it.
  const childEnv = Object.fromEntries(
    Object.entries(process.env).filter(
      (entry): entry is [string, string] =>
        /^(BENCH_LOCAL_|MALLOC_|GLIBC_TUNABLES$)/.test(entry[0]) && entry[1] !== undefined,
    ),
  );
  const stack = await startChild<Ready>('bench/children/local-stack.ts', childEnv, {
    execArgv: ['--expose-gc', ...nodeArgs],
  });
  try {
    const { baseUrl, keys } = stack.ready;
    const path = new URL(`${baseUrl}/v1/branch`).pathname;
    const load = keys.map((key) => ({ method: 'GET' as const, path, headers: { authorization: `Bearer ${key}` } }));
    const sample = () => stack.request<Sample>('sample');
    const drive = async (amount: number) => {
      const result = await autocannon({
        url: baseUrl,
        connections: settings.connections,
        amount,
        timeout: 10,
        requests: load,
      });
      // Every request must succeed: a 429 or 5xx would be a cheaper path than the one measured.
      if (result['2xx'] !== amount) {
        throw new Error(`local stack: ${result['2xx']} of ${amount} answered 2xx (${result.errors} errors)`);
      }
      return result.duration;
    };
    await drive(settings.warmup);
    const before = await sample();
    const samples = [before];
    let seconds = 0;
    for (let batch = 0; batch < settings.batches; batch += 1) {
      seconds += await drive(settings.requests / settings.batches);
      samples.push(await sample());
    }
    const after = samples.at(-1)!;
    const requests = settings.requests;
    return {
      connections: settings.connections,
      warmup: settings.warmup,
      requests,
      rssBeforeMb: mb(before.rss),
      rssAfterMb: mb(after.rss),
      rssGrowthMb: mb(after.rss - before.rss),
      bytesPerRequest: round((after.rss - before.rss) / requests, 0),
      rssAtLoadEndBeforeMb: mb(before.rssAtLoadEnd),
      rssAtLoadEndAfterMb: mb(after.rssAtLoadEnd),
      rssAtLoadEndGrowthMb: mb(after.rssAtLoadEnd - before.rssAtLoadEnd),
      nodeFlags: nodeArgs.join(' ') || 'defaults',
      heapBeforeMb: mb(before.heapUsed),
      heapAfterMb: mb(after.heapUsed),
      heapTotalBeforeMb: mb(before.heapTotal),
      heapTotalAfterMb: mb(after.heapTotal),
      youngMb: mb(after.generations.young),
      oldBeforeMb: mb(before.generations.old),
      oldAfterMb: mb(after.generations.old),
      arrayBuffersBeforeMb: mb(before.arrayBuffers),
      arrayBuffersAfterMb: mb(after.arrayBuffers),
      requestsPerSecond: round(requests / seconds, 0),
      cpuMsPerRequest: round((after.cpuMicros - before.cpuMicros) / 1000 / requests, 2),
      usageRecordsDelivered: after.delivered - before.delivered,
      heapBytesPerCall: round((after.heapUsed - before.heapUsed) / requests, 0),
      samples: samples.map((one) => ({
        rssMb: mb(one.rss),
        rssAtLoadEndMb: mb(one.rssAtLoadEnd),
        heapMb: mb(one.heapUsed),
        heapTotalMb: mb(one.heapTotal),
        externalMb: mb(one.external),
        youngMb: mb(one.generations.young),
        oldMb: mb(one.generations.old),
      })),
    };
  } finally {
    await stack.stop();
  }
};
