/**
 * The Node that runs the local stack (`npm start`, `branch-api serve`), sized so that its resident
 * memory follows the data it stores (docs/capacity.md "Local stack").
 *
 * By default V8 sizes the young generation by the machine's memory and grows it as the process
 * allocates: up to 2 × 64 MB here, committed in steps of several MB during the load, 110 to 127
 * MB of RSS after a forced GC. Fixed at 2 × 16 MB it takes no steps and costs no measurable CPU.
 * `--expose-gc` gives the stack the memory-reducing GC it runs once idle (./idle-release.ts).
 * These can only be set when Node starts, so the command starts Node again with the flags, unless
 * this process already has them or the user chose a young generation or heap size of their own
 * (`NODE_OPTIONS`, Node's own arguments). The launcher decides before the CLI loads anything else
 * (bin/branch-api.js), so it stays small while the stack runs. Not on Windows: there a signal sent
 * to a child kills it outright, which would cut the stack's clean stop short, so the stack runs in
 * the first Node, with V8's own sizing.
 */
import { spawn } from 'node:child_process';
import { constants } from 'node:os';

/** The flags the local stack runs with; the benchmark uses these too (bench/local-stack.ts). */
export const LOCAL_STACK_NODE_FLAGS: readonly string[] = [
  '--expose-gc',
  '--min-semi-space-size=16',
  '--max-semi-space-size=16',
];

/** True when this Node needs starting again: it lacks the flags and was given no sizing of its own. */
export const needsRelaunch = (
  execArgv: readonly string[] = process.execArgv,
  nodeOptions: string = process.env.NODE_OPTIONS ?? '',
  platform: NodeJS.Platform = process.platform,
): boolean => {
  if (platform === 'win32') return false;
  const given = [...execArgv, ...nodeOptions.split(/\s+/)];
  if (LOCAL_STACK_NODE_FLAGS.every((flag) => given.includes(flag))) return false;
  return !given.some((flag) => /^--((max|min)-semi-space-size|max-heap-size|heap-growing-percent)\b/.test(flag));
};

const FORWARDED: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/** Node's own arguments for the child: not the inspector's, whose port the launcher already holds. */
export const childExecArgv = (execArgv: readonly string[] = process.execArgv): string[] =>
  execArgv.filter((flag) => !/^--inspect(-brk|-wait|-port)?(=|$)/.test(flag));

/** The exit code of a child that ended with `code` or by `signal`: 128 + the signal's number, as a shell reports it. */
export const exitCodeOf = (code: number | null, signal: NodeJS.Signals | null): number =>
  code ?? (signal ? 128 + (constants.signals[signal] ?? 0) : 1);

/**
 * Runs this same command in a Node with LOCAL_STACK_NODE_FLAGS and resolves with its exit code.
 * Output goes straight to this process's terminal. The child has a process group of its own, so a
 * Ctrl-C reaches it once, forwarded from here, as a stop signal sent to this process does (two
 * would cut its clean stop short); if this process dies, the child sees its channel close and
 * stops too (`followParent`).
 */
export const relaunchWithFlags = (argv: readonly string[] = process.argv): Promise<number> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...childExecArgv(), ...LOCAL_STACK_NODE_FLAGS, ...argv.slice(1)], {
      stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
      detached: true,
    });
    // The first stop signal only: a second (a double Ctrl-C, or npm passing one on as well) would
    // kill the stack in the middle of its clean stop.
    let forwarded = false;
    const forward = (signal: NodeJS.Signals) => {
      if (forwarded) return;
      forwarded = true;
      child.kill(signal);
    };
    for (const signal of FORWARDED) process.on(signal, forward);
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      for (const signal of FORWARDED) process.off(signal, forward);
      resolve(exitCodeOf(code, signal));
    });
  });

/**
 * In the relaunched process: if the parent goes (killed outright), stop as on SIGTERM, or at once
 * if nothing is listening for it yet. The channel does not keep the process alive.
 */
export const followParent = (): void => {
  if (!process.send) return;
  process.once('disconnect', () => {
    if (!process.emit('SIGTERM', 'SIGTERM')) process.exit(1);
  });
  process.channel?.unref();
};

/** The CLI's command: its first argument that is not an option. */
const commandOf = (argv: readonly string[]): string | undefined => argv.slice(2).find((arg) => !arg.startsWith('-'));

/**
 * For bin/branch-api.js, before it loads the CLI: when the command is `serve` and this Node needs
 * the flags, runs the stack in a Node that has them, sets the exit code and returns true.
 */
export const relaunchIfServing = async (argv: readonly string[] = process.argv): Promise<boolean> => {
  if (commandOf(argv) !== 'serve' || !needsRelaunch()) return false;
  process.exitCode = await relaunchWithFlags(argv);
  return true;
};
