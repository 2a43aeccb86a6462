/** `branch-api console`: serves the settings console until Ctrl-C. */
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { showControls } from './layout';
import { isLoopback } from './session';
import { startConsole, type SettingsConsole } from './server';

export interface ConsoleCommandOptions {
  port: number;
  host: string;
  branch?: string[];
}

export const NEW_LINK_HINT = 'Press Enter for a new launch link (the last one then opens nothing).';

/**
 * Each line typed in the terminal prints a new launch link: a browser that lost its session
 * (or a planted cookie) gets back in without a restart. Returns what stops listening.
 */
export const offerNewLinks = (
  settings: Pick<SettingsConsole, 'newLink'>,
  input: NodeJS.ReadableStream = process.stdin,
  write: (text: string) => void = (text) => process.stdout.write(text),
): (() => void) => {
  const lines = createInterface({ input, terminal: false });
  lines.on('line', () => write(`Settings console: ${settings.newLink()}\n`));
  return () => lines.close();
};

/** Resolves on Ctrl-C (SIGINT) or SIGTERM, after `close` (whether or not it succeeds). */
export const untilStopped = async (close: () => Promise<void>): Promise<void> => {
  const listening = new AbortController();
  await Promise.race(['SIGINT', 'SIGTERM'].map((signal) => once(process, signal, { signal: listening.signal })));
  listening.abort();
  process.stdout.write('\nStopping…\n');
  await close().catch(() => undefined);
};

export const exposureWarning = (host: string): string | undefined =>
  isLoopback(host)
    ? undefined
    : `warning: the settings console is listening on ${showControls(host)}, not only on this machine. ` +
      'Anyone who can reach it and obtains the link can create and revoke keys; prefer the default 127.0.0.1.';

export const runConsoleCommand = async (options: ConsoleCommandOptions): Promise<void> => {
  const warning = exposureWarning(options.host);
  if (warning) process.stderr.write(`${warning}\n`);
  let settings: SettingsConsole;
  try {
    settings = await startConsole({ port: options.port, host: options.host, branches: options.branch ?? [] });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      throw new Error(`Port ${options.port} on ${options.host} is already in use; set CONSOLE_PORT to another port`, {
        cause: error,
      });
    }
    throw error;
  }
  process.stdout.write(
    [
      `Settings console: ${settings.url}`,
      '  Open this link in a browser on this machine; the token in it is the only way in.',
      NEW_LINK_HINT,
      'Press Ctrl-C to stop.',
      '',
    ].join('\n'),
  );
  const stopOffering = offerNewLinks(settings);
  await untilStopped(() => {
    stopOffering();
    return settings.close();
  });
};
