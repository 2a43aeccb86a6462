/**
 * What every command file shares: the one way to print a result, the context every operator
 * command runs with, and the option parsers. Human output goes through lib/operator/terminal.ts,
 * so stored values cannot drive the terminal.
 */
import { InvalidArgumentError } from 'commander';
import { createOperatorContext, type OperatorContext } from '../../lib/operator/context';
import { terminalSafeJson, type TerminalText } from '../../lib/operator/terminal';

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

/** Runs an operator command with a context that is always closed. */
export const withContext =
  <Args extends unknown[]>(action: (ctx: OperatorContext, ...args: Args) => Promise<void>) =>
  async (...args: Args): Promise<void> => {
    const ctx = createOperatorContext(process.env);
    try {
      await action(ctx, ...args);
    } finally {
      ctx.close();
    }
  };

export const dash = (value: string | null | undefined) => value ?? '-';

/** Options given only when set: commander leaves absent ones undefined, the operator library wants them absent. */
export const defined = <T extends Record<string, unknown>>(values: T): Partial<T> =>
  Object.fromEntries(Object.entries(values).filter(([, value]) => value !== undefined)) as Partial<T>;

export const kit = { withContext, print };
