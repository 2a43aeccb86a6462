/**
 * A quiet `npm start` (docs/decisions.md "Local run"): the banner, then warnings and errors only.
 * The functions' request logs, metrics and the aggregator's logs (Powertools writes them to
 * process.stdout, warnings and errors to process.stderr) go to a log file named in the banner;
 * `--verbose` writes them to the terminal as well. Warnings and errors go to both.
 */
import { mkdir, mkdtemp, open } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { terminal, type TerminalText } from '../operator/terminal';

export const LOG_FILE_NAME = 'branch-api.log';

/**
 * Log text held while the file can't take it (a full disk: the usage records to replay are in
 * it); past this the oldest lines are dropped, and the terminal says how much was.
 */
export const MAX_UNWRITTEN_LOG_BYTES = 16 * 1024 * 1024;
/** How long a log file that failed a write waits before it is written again. */
const RETRY_LOG_MS = 1000;

/** The log file: LOG_FILE, else `branch-api.log` in the data directory, else in a new temporary directory. */
export const logFilePath = async (env: Record<string, string | undefined>, dataDir?: string): Promise<string> => {
  if (env.LOG_FILE?.trim()) return env.LOG_FILE.trim();
  return join(dataDir ?? (await mkdtemp(join(tmpdir(), 'branch-api-'))), LOG_FILE_NAME);
};

type Write = typeof process.stdout.write;

/**
 * Appends to `file` in order, one write at a time, counting the bytes each write took: after a
 * failed write (ENOSPC) the rest waits in memory, bounded, and goes once the file takes it again.
 */
export const openLogAppender = async (
  file: string,
  tell: (text: TerminalText) => void,
  maxBytes = MAX_UNWRITTEN_LOG_BYTES,
) => {
  const handle = await open(file, 'a');
  const queue: Buffer[] = [];
  let queued = 0;
  let dropped = 0;
  let failing: string | undefined;
  let closing = false;
  let draining: Promise<void> | undefined;

  const writeHead = async () => {
    const head = queue[0]!;
    const { bytesWritten } = await handle.write(head);
    queued -= bytesWritten;
    if (bytesWritten < head.length) queue[0] = head.subarray(bytesWritten);
    else queue.shift();
  };
  const drain = async () => {
    while (queue.length > 0) {
      try {
        await writeHead();
        if (failing !== undefined) tell(terminal`The log file ${file} is written again.`);
        failing = undefined;
      } catch (error) {
        if (failing === undefined)
          tell(
            terminal`The log file ${file} can't be written (${(error as Error).message}); its lines wait in memory.`,
          );
        failing = (error as Error).message;
        if (closing) return;
        await sleep(RETRY_LOG_MS);
      }
    }
  };
  const run = () => (draining ??= drain().finally(() => (draining = undefined)));

  return {
    /** Bytes waiting to be written. */
    held: () => queued,
    write: (chunk: Uint8Array | string) => {
      const bytes = Buffer.from(chunk);
      queue.push(bytes);
      queued += bytes.length;
      // The oldest whole lines go first; the head may be half written.
      while (queued > maxBytes && queue.length > 2) {
        const [oldest] = queue.splice(1, 1);
        queued -= oldest!.length;
        dropped += oldest!.length;
      }
      void run();
    },
    close: async () => {
      closing = true;
      await draining;
      await run();
      const lost = dropped + queued;
      if (lost > 0) tell(terminal`${lost} bytes of log lines could not be written to ${file}.`);
      await handle.close();
    },
  };
};

/** Routes what this process writes to stdout into `file` (and, when verbose, on to the terminal). */
export const routeLogs = async (file: string, verbose: boolean) => {
  await mkdir(dirname(file), { recursive: true });
  const { stdout, stderr } = process;
  const toTerminal = stdout.write.bind(stdout);
  const toStderr = stderr.write.bind(stderr);
  const log = await openLogAppender(file, (text) => void toStderr(`${text}\n`));
  const tee =
    (terminal: Write | undefined): Write =>
    (chunk: Uint8Array | string, ...rest: unknown[]) => {
      log.write(chunk);
      if (terminal) return (terminal as (chunk: Uint8Array | string, ...more: unknown[]) => boolean)(chunk, ...rest);
      (rest.find((arg) => typeof arg === 'function') as (() => void) | undefined)?.();
      return true;
    };
  stdout.write = tee(verbose ? toTerminal : undefined);
  stderr.write = tee(toStderr);
  return {
    /** Where the logs go. */
    file,
    /** Writes to the terminal itself (the banner), never to the log file. */
    print: (text: string) => void toTerminal(text),
    /** Puts stdout and stderr back and closes the file. */
    close: async () => {
      stdout.write = toTerminal;
      stderr.write = toStderr;
      await log.close();
    },
  };
};
