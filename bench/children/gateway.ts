/**
 * The local gateway (lib/local/gateway.ts) with the real handlers, in a process of its own so its
 * memory can be sampled: `memory` forces a full GC when --expose-gc is given, then reports
 * process.memoryUsage().
 */
import { startGateway } from '../../lib/local/gateway';
import { serveParent } from '../lib/child';

const gc = (globalThis as { gc?: () => void }).gc;
const gateway = await startGateway({ port: 0 });
serveParent(
  { baseUrl: gateway.baseUrl },
  {
    memory: () => {
      gc?.();
      gc?.();
      return { gc: gc !== undefined, ...process.memoryUsage() };
    },
  },
);
