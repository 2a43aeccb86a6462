/**
 * The embedded DynamoDB on disk (docs/decisions.md "Embedded DynamoDB"): dynalite on LevelDB in a
 * worker thread (./disk-store-worker.mjs). dynalite throws a LevelDB failure it can't answer (a
 * full disk) out of its callbacks, which ends the thread it runs in: here the store alone. While
 * it is down every request is answered 503, as DynamoDB answers when it can't serve, and a new
 * worker opens the store again every second (LevelDB replays its log), so the stack recovers by
 * itself once there is room again.
 */
import { Agent, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { PROJECT_ROOT } from '../project-paths';

const WORKER_FILE = join(PROJECT_ROOT, 'lib', 'local', 'disk-store-worker.mjs');

/** How long a store that stopped waits before it is opened again. */
export const REOPEN_EVERY_MS = 1000;

type Message = { listening?: true; failed?: string };

/** dynalite checks that a request is signed, not the signature: a ListTables it answers once LevelDB is open. */
const probe = (socket: string) =>
  new Promise<void>((resolve, reject) => {
    const request = httpRequest(
      {
        socketPath: socket,
        method: 'POST',
        headers: {
          'content-type': 'application/x-amz-json-1.0',
          'x-amz-target': 'DynamoDB_20120810.ListTables',
          'x-amz-date': '20000101T000000Z',
          authorization:
            'AWS4-HMAC-SHA256 Credential=local/20000101/local/dynamodb/aws4_request, SignedHeaders=host, Signature=0',
        },
      },
      (answer) => {
        answer.resume();
        if (answer.statusCode === 200) resolve();
        else reject(new Error(`the store answered ${answer.statusCode}`));
      },
    );
    request.on('error', reject);
    request.end('{}');
  });

/** A worker with the store open and answering, or the reason it stopped before. */
const openWorker = async (dataDir: string, socket: string): Promise<{ worker: Worker; reason: () => string }> => {
  // A worker that died leaves its socket file behind.
  await rm(socket, { force: true });
  const worker = new Worker(WORKER_FILE, { workerData: { dataDir, socket } });
  let reason = 'the store stopped';
  const listening = new Promise<void>((resolve) =>
    worker.on('message', (message: Message) => {
      if (message.failed) reason = message.failed;
      if (message.listening) resolve();
    }),
  );
  const stopped = new Promise<never>((_, reject) => worker.once('exit', () => reject(new Error(reason))));
  try {
    await Promise.race([listening.then(() => probe(socket)), stopped]);
  } catch (error) {
    await worker.terminate();
    throw new Error(reason === 'the store stopped' ? (error as Error).message : reason, { cause: error });
  }
  stopped.catch(() => undefined);
  return { worker, reason: () => reason };
};

/** What DynamoDB answers when it can't serve; the SDK retries it, then the API answers 503. */
const unavailable = (request: IncomingMessage, response: ServerResponse, reason: string): void => {
  request.resume();
  const body = JSON.stringify({
    __type: 'com.amazonaws.dynamodb.v20120810#ServiceUnavailable',
    message: `The embedded DynamoDB can't serve (${reason}); it opens its store again every second.`,
  });
  response.writeHead(503, {
    'Content-Type': 'application/x-amz-json-1.0',
    'Content-Length': String(Buffer.byteLength(body)),
  });
  response.end(body);
};

/** The one-line reason a store could not be opened at start, naming a second stack on the same folder. */
const openFailure = (dataDir: string, reason: string): Error =>
  /\/LOCK\b/.test(reason)
    ? new Error(
        `The data directory ${dataDir} is in use by another branch-api serve; stop it or use another --data-dir`,
      )
    : new Error(`The embedded DynamoDB could not open ${dataDir}: ${reason}`);

/**
 * Opens the store in `dataDir`, or throws a one-line error saying why it can't. `onNotice` is told
 * when it stops serving and when it serves again.
 */
export const openDiskStore = async (dataDir: string, onNotice: (message: string) => void) => {
  const socketDir = await mkdtemp(join(tmpdir(), 'branch-api-store-'));
  const socket = join(socketDir, 'store.sock');
  const agent = new Agent({ keepAlive: true });
  let current: Worker | undefined;
  let fault: string | undefined;
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  let opening: Promise<void> | undefined;

  const reopen = (since: number) => {
    timer = setTimeout(() => {
      opening = openWorker(dataDir, socket).then(
        (opened) => {
          if (closed) return void opened.worker.terminate();
          watch(opened);
          onNotice(
            `The embedded DynamoDB serves again (it could not for ${Math.round((Date.now() - since) / 1000)} s).`,
          );
        },
        (error: Error) => {
          fault = error.message;
          if (!closed) reopen(since);
        },
      );
    }, REOPEN_EVERY_MS);
  };

  const watch = ({ worker, reason }: { worker: Worker; reason: () => string }) => {
    current = worker;
    fault = undefined;
    // From the failure on, nothing new goes to the worker; what it has under way still ends.
    const failed = () => {
      if (fault !== undefined || closed) return;
      fault = reason();
      onNotice(`The embedded DynamoDB stopped (${fault}); the API answers 503 until it serves again.`);
    };
    worker.on('message', (message: Message) => message.failed && failed());
    worker.once('exit', () => {
      current = undefined;
      failed();
      if (!closed) reopen(Date.now());
    });
  };

  try {
    watch(await openWorker(dataDir, socket));
  } catch (error) {
    await rm(socketDir, { recursive: true, force: true });
    throw openFailure(dataDir, (error as Error).message);
  }

  const forward = (request: IncomingMessage, response: ServerResponse) => {
    const upstream = httpRequest(
      { socketPath: socket, agent, method: request.method, path: request.url, headers: request.headers },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    // The worker ended under this request: whatever it did is in LevelDB's log or not done.
    upstream.on('error', () =>
      response.headersSent ? response.destroy() : unavailable(request, response, fault ?? 'the store stopped'),
    );
    request.pipe(upstream);
  };

  const down = () => current === undefined || fault !== undefined;
  return {
    /** Passes a request to the store, or answers 503 with the reason while it can't serve. */
    serve: (request: IncomingMessage, response: ServerResponse) =>
      down() ? unavailable(request, response, fault ?? 'closed') : forward(request, response),
    /** True while it can't serve. */
    down,
    close: async () => {
      closed = true;
      clearTimeout(timer);
      await opening;
      agent.destroy();
      const worker = current;
      if (worker) {
        const exited = new Promise((resolve) => worker.once('exit', resolve));
        worker.postMessage('close');
        await exited;
      }
      await rm(socketDir, { recursive: true, force: true });
    },
  };
};
