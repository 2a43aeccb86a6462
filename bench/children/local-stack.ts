/**
 * The local stack as `npm start` runs it (lib/local/environment.ts): the embedded DynamoDB in
 * this process with the usage change feed inside it, the gateway with the real handlers, the
 * rollups aggregator fed by the change feed. In a process of its own so its memory and CPU can be
 * sampled: `sample` waits for the change feed to deliver everything written so far (the rollups
 * are current), reads what the store holds, forces a full GC (with --expose-gc), then reports
 * memory, CPU time, the store's contents and the feed's figures.
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
      // Read before the GC: the walk's own garbage is gone by the time memory is sampled.
      const stored = await environment.storedData();
      gc?.();
      gc?.();
      const cpu = process.cpuUsage();
      return {
        gc: gc !== undefined,
        ...process.memoryUsage(),
        cpuMicros: cpu.user + cpu.system,
        delivered: environment.usageFeed.stats().delivered,
        stored,
      };
    },
  },
);
