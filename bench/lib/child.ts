/**
 * Child processes of the benchmark: each part that is measured runs in its own Node process
 * (TypeScript through tsx), so its memory and CPU are its own. They talk over the IPC channel:
 * the child sends `{ type: 'ready', ... }` once, then answers each `{ id, type }` request with
 * `{ id, ... }`.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { PROJECT_ROOT } from './fixtures';

/**
 * `BENCH_CPU_PROF=1 npm run bench -- --only …` writes a V8 CPU profile of every child process to
 * bench/out/prof/ (open it in Chrome DevTools or speedscope): the evidence behind a figure.
 */
export const profileArgs = (): string[] =>
  process.env.BENCH_CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', join(PROJECT_ROOT, 'bench', 'out', 'prof')] : [];

export interface Child<Ready> {
  process: ChildProcess;
  ready: Ready;
  request<T>(type: string, payload?: Record<string, unknown>): Promise<T>;
  stop(): Promise<void>;
}

export const startChild = async <Ready>(
  script: string,
  env: Record<string, string>,
  { execArgv = [] as string[], timeoutMs = 60_000 } = {},
): Promise<Child<Ready>> => {
  const child = fork(join(PROJECT_ROOT, script), [], {
    cwd: PROJECT_ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    execArgv: ['--import', 'tsx', ...profileArgs(), ...execArgv],
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-4000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const pending = new Map<number, (message: Record<string, unknown>) => void>();
  let nextId = 1;
  const ready = await new Promise<Ready>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${script} not ready in ${timeoutMs} ms: ${output}`)), timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${script} exited (${code}) before it was ready: ${output}`));
    });
    child.on('message', (message: Record<string, unknown>) => {
      if (message.type === 'ready') {
        clearTimeout(timer);
        resolve(message as Ready);
      } else if (typeof message.id === 'number') pending.get(message.id)?.(message);
    });
  });
  return {
    process: child,
    ready,
    request: <T>(type: string, payload: Record<string, unknown> = {}) =>
      new Promise<T>((resolve, reject) => {
        const id = nextId++;
        const timer = setTimeout(() => reject(new Error(`${script}: no answer to ${type}: ${output}`)), timeoutMs);
        pending.set(id, (message) => {
          clearTimeout(timer);
          pending.delete(id);
          resolve(message as T);
        });
        child.send({ ...payload, id, type });
      }),
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
};

/** In a child: send `ready`, and answer requests with `handlers[type](message)`. */
export const serveParent = (
  ready: Record<string, unknown>,
  handlers: Record<string, (message: Record<string, unknown>) => unknown> = {},
): void => {
  process.on('message', (message: Record<string, unknown>) => {
    void (async () => {
      const handler = handlers[String(message.type)];
      const answer = handler ? await handler(message) : { error: `unknown request ${String(message.type)}` };
      process.send?.({ ...(answer as object), id: message.id });
    })();
  });
  // A normal exit, so that --cpu-prof (BENCH_CPU_PROF) writes its profile.
  process.on('disconnect', () => process.exit(0));
  process.on('SIGTERM', () => process.exit(0));
  process.send?.({ ...ready, type: 'ready' });
};
