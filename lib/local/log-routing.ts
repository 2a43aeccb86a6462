/**
 * A quiet `npm start` (docs/decisions.md "Local run"): the banner, then warnings and errors only.
 * The functions' request logs, metrics and the aggregator's logs (Powertools writes them to
 * process.stdout, warnings and errors to process.stderr) go to a log file named in the banner;
 * `--verbose` writes them to the terminal as well. Warnings and errors go to both.
 */
import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

export const LOG_FILE_NAME = 'branch-api.log';

export interface LogRouting {
  /** Where the logs go. */
  readonly file: string;
  /** Writes to the terminal itself (the banner), never to the log file. */
  print(text: string): void;
  /** Puts stdout and stderr back and closes the file. */
  close(): Promise<void>;
}

/** The log file: LOG_FILE, else `branch-api.log` in the data directory, else in a new temporary directory. */
export const logFilePath = async (env: Record<string, string | undefined>, dataDir?: string): Promise<string> => {
  if (env.LOG_FILE?.trim()) return env.LOG_FILE.trim();
  return join(dataDir ?? (await mkdtemp(join(tmpdir(), 'branch-api-'))), LOG_FILE_NAME);
};

type Write = typeof process.stdout.write;

/** Routes what this process writes to stdout into `file` (and, when verbose, on to the terminal). */
export const routeLogs = async (file: string, verbose: boolean): Promise<LogRouting> => {
  await mkdir(dirname(file), { recursive: true });
  const log = createWriteStream(file, { flags: 'a' });
  const { stdout, stderr } = process;
  const toTerminal = stdout.write.bind(stdout);
  const toStderr = stderr.write.bind(stderr);
  const tee =
    (terminal: Write | undefined): Write =>
    (chunk: Uint8Array | string, ...rest: unknown[]) => {
      log.write(chunk);
      if (terminal) return (terminal as (chunk: Uint8Array | string, ...more: unknown[]) => boolean)(chunk, ...rest);
      const callback = rest.find((arg) => typeof arg === 'function') as (() => void) | undefined;
      callback?.();
      return true;
    };
  stdout.write = tee(verbose ? toTerminal : undefined);
  stderr.write = tee(toStderr);
  return {
    file,
    print: (text) => void toTerminal(text),
    close: async () => {
      stdout.write = toTerminal;
      stderr.write = toStderr;
      await new Promise<void>((resolve) => log.end(resolve));
    },
  };
};
