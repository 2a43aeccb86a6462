/**
 * What every command file shares: the one way to print a result, the context every operator
 * command runs with, and the option parsers. Human output goes through lib/operator/terminal.ts,
 * so stored values cannot drive the terminal.
 */
import { InvalidArgumentError, type Command } from 'commander';
import type { OperatorContext } from '../../lib/operator/context';
import type { PendingActivity } from '../../lib/operator/keys';
import { terminal, terminalSafeJson, type TerminalText } from '../../lib/operator/terminal';

export interface JsonOption {
  json?: boolean;
}

/** The one way a command writes its result: exact JSON with --json, escaped text otherwise. */
export const print = (value: unknown, options: JsonOption, text: () => TerminalText): void => {
  process.stdout.write(`${options.json ? terminalSafeJson(value) : text().text}\n`);
};

/** Columns a table may take: the terminal's width, or unbounded when the output is piped. */
export const outputWidth = (): number | undefined =>
  process.stdout.isTTY && process.stdout.columns > 0 ? process.stdout.columns : undefined;

/** A command on a branch's data: `--branch <id>` (required, `branch` its help) and `--json` (`json` its help). */
export const branchCommand = (
  parent: Command,
  name: string,
  description: string,
  branch = 'branch id',
  json = 'JSON output',
) => parent.command(name).description(description).requiredOption('--branch <id>', branch).option('--json', json);

export const positiveInt = (max: number) => (value: string) => {
  if (!/^[1-9][0-9]*$/.test(value) || Number(value) > max) {
    throw new InvalidArgumentError(`must be a whole number from 1 to ${max}`);
  }
  return Number(value);
};

export const port = (value: string) => {
  if (!/^[0-9]+$/.test(value) || Number(value) > 65535) throw new InvalidArgumentError('must be a port number');
  return Number(value);
};

/**
 * Runs an operator command with a context that is always closed. The context (and with it the
 * AWS SDK) loads when a command runs, so `--help` and `--version` stay quick.
 */
export const withContext =
  <Args extends unknown[], R>(action: (ctx: OperatorContext, ...args: Args) => Promise<R>) =>
  async (...args: Args): Promise<R> => {
    const { createOperatorContext, finishKeyActions } = await import('../../lib/operator/context');
    const ctx = createOperatorContext(process.env);
    try {
      await finishKeyActions(ctx);
      return await action(ctx, ...args);
    } finally {
      ctx.close();
    }
  };

/**
 * Runs a key action, then warns on stderr: once per entry it returns as left pending (the action
 * happened, so the exit code stays 0; the entry is finished later), and when its event went
 * nowhere: with neither KEY_EVENT_BUS_NAME nor KEY_EVENTS_FILE set, key events are dropped
 * (docs/decisions.md "Key events").
 */
export const withKeyAction =
  <Args extends unknown[]>(action: (ctx: OperatorContext, ...args: Args) => Promise<PendingActivity[] | undefined>) =>
  async (...args: Args): Promise<void> => {
    const pending = await withContext(action)(...args);
    const { pendingNotice } = await import('../../lib/operator/keys');
    for (const entry of pending ?? []) process.stderr.write(`${terminal`warning: ${pendingNotice(entry)}`}\n`);
    const { readKeyEventSettings } = await import('../../shared/config/env');
    const settings = readKeyEventSettings(process.env);
    if (!settings.busName && !settings.file) {
      process.stderr.write(
        "warning: no key event was sent: set KEY_EVENT_BUS_NAME to the deployed stack's bus (its " +
          'KeyEventBusName output), or KEY_EVENTS_FILE to a file for a local run (npm start prints one)\n',
      );
    }
  };
