/** The local gateway with the real handlers (lib/local/gateway.ts), in a process of its own; sends its base URL. */
import { startGateway } from '../../lib/local/gateway';

const gateway = await startGateway({ port: 0 });
process.send?.({ baseUrl: gateway.baseUrl });
process.on('SIGTERM', () => void gateway.close().then(() => process.exit(0)));
