/**
 * The local stack as `npm start` runs it (lib/local/environment.ts): the embedded DynamoDB in
 * this process with the usage change feed in front of it, the gateway with the real handlers, the
 * rollups aggregator fed by the change feed, and BENCH_KEYS keys (bench/lib/fixtures.ts). In a process of its own so its memory and CPU can be
 * sampled: `sample` waits for the change feed to deliver everything written so far (the rollups
 * are current), forces a full GC (with --expose-gc), then reports memory (with V8's young and
 * old generations), CPU time and the feed's figures.
 */
import { getHeapSpaceStatistics } from 'node:v8';
import { startLocalEnvironment } from '../../lib/local/environment';
import { createOperatorContext } from '../../lib/operator/context';
import { createKey } from '../../lib/operator/keys';
import { parseRateLimit } from '../../shared/domain/rate-limit';
import { serveParent } from '../lib/child';
import { BENCH_KEY_RATE_LIMIT, BENCH_KEYS } from '../lib/fixtures';

process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';

const gc = (globalThis as { gc?: () => void }).gc;

/** Committed bytes of V8's young (new_space) and old (old_space) generations. */
const generations = () => {
  const spaces = getHeapSpaceStatistics();
  const committed = (name: string) => spaces.find((one) => one.space_name === name)?.physical_space_size ?? 0;
  return { young: committed('new_space'), old: committed('old_space') };
};
const environment = await startLocalEnvironment({ port: 0, dynamoPort: 0 });
// The load takes BENCH_KEYS keys in turn, each counted call by call (bench/lib/fixtures.ts);
// BENCH_LOCAL_KEYS=32 BENCH_LOCAL_RATE_LIMIT=50/s measures the deployment's default limit instead.
const operator = createOperatorContext(process.env);
const keys: string[] = [];
const count = Number(process.env.BENCH_LOCAL_KEYS ?? BENCH_KEYS);
const rateLimit = parseRateLimit(process.env.BENCH_LOCAL_RATE_LIMIT ?? BENCH_KEY_RATE_LIMIT);
for (let i = 0; i < count; i += 1) {
  keys.push((await createKey(operator, { branchId: environment.demoBranchId, scopes: ['read'], rateLimit })).key);
}
operator.close();
serveParent(
  { baseUrl: environment.gateway.baseUrl, keys },
  {
    sample: async () => {
      await environment.usageFeed.drain();
      gc?.();
      const rssAtLoadEnd = process.memoryUsage.rss();
      const cpu = process.cpuUsage();
      return {
        gc: gc !== undefined,
        ...process.memoryUsage(),
        rssAtLoadEnd,
        generations: generations(),
        cpuMicros: cpu.user + cpu.system,
        delivered: environment.usageFeed.stats().delivered,
      };
    },
  },
);
