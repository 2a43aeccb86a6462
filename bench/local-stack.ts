/**
 * The local stack's own ceiling (docs/capacity.md "Local stack"): `npm start`'s composition in a
 * child (bench/children/local-stack.ts), driven by autocannon from this process at concurrency 16
 * on GET /v1/branch with the demo key. After a warm-up, 20,000 requests in batches; after each,
 * the child waits until the change feed has delivered every usage record to the rollups (so the
 * rate is one that keeps rollups current), forces a GC and reports RSS and CPU time.
 */
import autocannon from 'autocannon';
import { startChild } from './lib/child';
import { round } from './lib/stats';

interface Ready {
  baseUrl: string;
  key: string;
}
/** process.memoryUsage() after a forced GC, CPU time so far, usage records the feed delivered. */
type Sample = NodeJS.MemoryUsage & { cpuMicros: number; delivered: number };

const settings = {
  warmup: Number(process.env.BENCH_LOCAL_WARMUP ?? 2_000),
  requests: Number(process.env.BENCH_LOCAL_REQUESTS ?? 20_000),
  batches: 4,
  connections: 16,
};

const mb = (bytes: number) => round(bytes / 1024 / 1024, 1);

export const runLocalStack = async () => {
  const stack = await startChild<Ready>('bench/children/local-stack.ts', {}, { execArgv: ['--expose-gc'] });
  try {
    const { baseUrl, key } = stack.ready;
    const sample = () => stack.request<Sample>('sample');
    const drive = async (amount: number) => {
      const result = await autocannon({
        url: `${baseUrl}/v1/branch`,
        connections: settings.connections,
        amount,
        timeout: 10,
        headers: { authorization: `Bearer ${key}` },
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
      heapBeforeMb: mb(before.heapUsed),
      heapAfterMb: mb(after.heapUsed),
      arrayBuffersBeforeMb: mb(before.arrayBuffers),
      arrayBuffersAfterMb: mb(after.arrayBuffers),
      requestsPerSecond: round(requests / seconds, 0),
      cpuMsPerRequest: round((after.cpuMicros - before.cpuMicros) / 1000 / requests, 2),
      usageRecordsDelivered: after.delivered - before.delivered,
      samples: samples.map((one) => ({ rssMb: mb(one.rss), heapMb: mb(one.heapUsed) })),
    };
  } finally {
    await stack.stop();
  }
};
