/**
 * The local stack as `npm start` runs it (lib/local/environment.ts): the embedded DynamoDB in
 * this process behind the usage change feed, the gateway with the real handlers, the rollups
 * aggregator fed by the change feed. In a process of its own so its memory and CPU can be
 * sampled: `sample` forces a full GC (with --expose-gc), waits for the change feed to deliver
 * everything written so far (the rollups are current), then reports memory, CPU time and the
 * feed's figures.
 */
import { startLocalEnvironment } from '../../lib/local/environment';
import { serveParent } from '../lib/child';

// The demo key gets the deployment default; a load run must not be refused by it.
process.env.DEFAULT_RATE_LIMIT = '1000000/s';
process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';

const gc = (globalThis as { gc?: () => void }).gc;
const environment = await startLocalEnvironment({ port: 0, dynamoPort: 0 });
serveParent(
  { baseUrl: environment.gateway.baseUrl, key: environment.demoKey },
  {
    sample: async () => {
      await environment.usageFeed.drain();
      gc?.();
      gc?.();
      const cpu = process.cpuUsage();
      return {
        gc: gc !== undefined,
        ...process.memoryUsage(),
        cpuMicros: cpu.user + cpu.system,
        delivered: environment.usageFeed.stats().delivered,
      };
    },
  },
);
