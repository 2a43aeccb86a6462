/**
 * The embedded DynamoDB on disk, in a worker thread of its own (lib/local/disk-store.ts): dynalite
 * throws a LevelDB failure it can't answer (a full disk, a store another process holds) out of its
 * callbacks. Here that ends this thread only, after telling the stack why.
 */
import { setTimeout } from 'node:timers';
import { parentPort, workerData } from 'node:worker_threads';
import dynalite from 'dynalite';

/** How long the requests already under way may take to get their answers once the store failed. */
const DRAIN_MS = 1000;

const server = dynalite({ path: workerData.dataDir, createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });

let failed = false;
process.on('uncaughtException', (error) => {
  if (failed) return;
  failed = true;
  parentPort.postMessage({ failed: String((error && error.message) || error) });
  // A write LevelDB took whose answer is still queued gets it (the stack counts what it is told
  // was written); the stack sends nothing new meanwhile.
  setTimeout(() => process.exit(1), DRAIN_MS);
});

// A socket in a folder only this user may enter: no browser page can reach it (docs/decisions.md "Embedded DynamoDB").
server.listen(workerData.socket, () => parentPort.postMessage({ listening: true }));
parentPort.on('message', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
