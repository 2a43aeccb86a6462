/**
 * The bench drives the project from outside, as a user does: child processes (the CLI, the local
 * stack, a server of its own), HTTP, and the figures the operating system gives of a process.
 */
import { fork, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECT_ROOT } from './fixtures';

export const CLI = join(PROJECT_ROOT, 'bin', 'branch-api.js');

/** What a child gets: no settings of the shell the bench runs in, only these. */
export const cleanEnv = (env: Record<string, string> = {}): Record<string, string> => ({
  PATH: process.env.PATH ?? '',
  HOME: process.env.HOME ?? '',
  ...(process.env.TMPDIR ? { TMPDIR: process.env.TMPDIR } : {}),
  ...env,
});

export interface Timed {
  ms: number;
  stdout: string;
}

/** Runs `node args…` to its end; fails on a non-zero exit. `quiet`: its stdout is not kept. */
export const runNode = (args: string[], env: Record<string, string> = {}, { quiet = false } = {}): Timed => {
  const start = performance.now();
  const result = spawnSync(process.execPath, args, {
    cwd: PROJECT_ROOT,
    env: cleanEnv(env),
    encoding: 'utf8',
    stdio: ['ignore', quiet ? 'ignore' : 'pipe', 'pipe'],
    timeout: 300_000,
  });
  const ms = performance.now() - start;
  if (result.status !== 0) {
    throw new Error(`node ${args.join(' ')} exited with ${result.status}: ${result.stderr || result.error}`);
  }
  return { ms, stdout: result.stdout ?? '' };
};

/** `branch-api args…` as a user runs it, timed from spawn to exit. */
export const runCli = (args: string[], env: Record<string, string> = {}): Timed => runNode([CLI, ...args], env);

export interface Started {
  child: ChildProcess;
  /** performance.now() at spawn. */
  spawnedAt: number;
  match: RegExpMatchArray;
  output: () => string;
  /** Ctrl-C, as a user stops it; SIGKILL after 10 s. */
  stop(): Promise<void>;
}

/** Spawns `node args…` and resolves once its stdout matches `pattern`. */
export const startNode = (
  args: string[],
  env: Record<string, string>,
  pattern: RegExp,
  timeoutMs = 60_000,
): Promise<Started> =>
  new Promise((resolve, reject) => {
    const start = performance.now();
    const child = spawn(process.execPath, args, { cwd: PROJECT_ROOT, env: cleanEnv(env), stdio: 'pipe' });
    let stdout = '';
    let stderr = '';
    let started = false;
    const stop = async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((done) => child.once('exit', done));
      child.kill('SIGINT');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    };
    const timer = setTimeout(() => {
      void stop();
      reject(new Error(`node ${args.join(' ')}: no ${pattern} in ${timeoutMs} ms: ${stdout}${stderr}`));
    }, timeoutMs);
    child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (!started) reject(new Error(`node ${args.join(' ')} exited (${code}): ${stdout}${stderr}`));
    });
    child.stdout.on('data', (chunk: Buffer) => {
      // Once started, only the tail is kept: a server may write for as long as it runs.
      stdout = (stdout + chunk.toString()).slice(-16_000);
      const match = pattern.exec(stdout);
      if (!match || started) return;
      started = true;
      clearTimeout(timer);
      resolve({ child, spawnedAt: start, match, output: () => stdout + stderr, stop });
    });
  });

/** One GET; fails unless it answers `expected`. Redirects are followed by hand, cookies kept. */
export const getOk = async (url: string, headers: Record<string, string> = {}, expected = 200): Promise<string> => {
  let response = await fetch(url, { headers, redirect: 'manual' });
  if (response.status === 303 || response.status === 302) {
    const cookie = response.headers.getSetCookie().map((one) => one.split(';')[0]);
    const location = new URL(response.headers.get('location') ?? '/', url).href;
    await response.body?.cancel();
    response = await fetch(location, { headers: { ...headers, cookie: cookie.join('; ') }, redirect: 'manual' });
  }
  const body = await response.text();
  if (response.status !== expected) throw new Error(`GET ${url} answered ${response.status}: ${body.slice(0, 300)}`);
  return body;
};

export interface Resident {
  /** VmRSS: all resident pages, files mapped into memory included. */
  rss: number;
  /** RssAnon: the process's own memory (heap, stacks), no file pages. */
  anon: number;
}

/** Resident memory of a process and all its descendants, in bytes (Linux /proc). */
export const treeRss = (pid: number): Resident => {
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // Fields after the command name, which may itself hold spaces and parentheses.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      parents.set(Number(entry), Number(fields[1]));
    } catch {
      // The process ended while the table was read.
    }
  }
  const tree = [pid];
  for (let i = 0; i < tree.length; i += 1) {
    for (const [child, parent] of parents) if (parent === tree[i]) tree.push(child);
  }
  const total = { rss: 0, anon: 0 };
  for (const one of tree) {
    try {
      const status = readFileSync(`/proc/${one}/status`, 'utf8');
      const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) * 1024;
      total.rss += kb('VmRSS');
      total.anon += kb('RssAnon');
    } catch {
      // Ended in between: it holds nothing any more.
    }
  }
  return total;
};

export interface Child<Ready> {
  ready: Ready;
  pid: number;
  stop(): Promise<void>;
}

/** CPU time a process has used so far, user and system, in ms (Linux /proc, in clock ticks of 10 ms). */
export const cpuMs = (pid: number): number => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of stat, 12 and 13 after the command name.
  return (Number(fields[11]) + Number(fields[12])) * 10;
};

/**
 * Forks a TypeScript script of the bench (through tsx) in a process of its own; resolves with the
 * first message it sends (`process.send`), once it is ready.
 */
export const startChild = <Ready>(script: string, env: Record<string, string>): Promise<Child<Ready>> =>
  new Promise((resolve, reject) => {
    const child = fork(join(PROJECT_ROOT, script), [], {
      cwd: PROJECT_ROOT,
      env: cleanEnv(env),
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
    const failed = (code: number | null) =>
      reject(new Error(`${script} exited (${code}) before it was ready: ${stderr}`));
    child.once('exit', failed);
    child.once('message', (ready: Ready) => {
      child.off('exit', failed);
      resolve({
        ready,
        pid: child.pid!,
        stop: async () => {
          if (child.exitCode !== null) return;
          const exited = new Promise((done) => child.once('exit', done));
          child.kill('SIGTERM');
          const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
          await exited;
          clearTimeout(timer);
        },
      });
    });
  });
