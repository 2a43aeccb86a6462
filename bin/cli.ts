/**
 * `branch-api`: the operator CLI (keys, usage, seed, tables) and the local stack (`serve`). Each
 * command group lives in bin/commands/. Every command prints readable text by default and JSON
 * with --json; a failure exits non-zero with one line on stderr, or with --json the object
 * `{"error":{"code","message"}}` with a stable code (docs/decisions.md "Operator errors").
 */
import { readFileSync } from 'node:fs';
import { Command, CommanderError, Help, type Option } from 'commander';
import { escapeForTerminal } from '../lib/operator/terminal';
import { addServeCommands } from './commands/serve';
import { addKeyCommands } from './commands/keys';
import { addUsageCommands } from './commands/usage';
import { addDataCommands } from './commands/data';
import { reportFailure } from './commands/failure';

const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

/** Help marks required options; commander shows defaults and environment variables itself. */
const helpConfiguration: Partial<Help> = {
  optionDescription(this: Help, option: Option): string {
    const description = Help.prototype.optionDescription.call(this, option);
    return option.mandatory ? `${description} (required)` : description;
  },
};

export const buildProgram = (jsonErrors = false): Command => {
  const program = new Command('branch-api')
    // Settings given before the commands are added are inherited by every subcommand.
    .configureHelp(helpConfiguration)
    .configureOutput(
      jsonErrors
        ? // The error is written once, as JSON, by the caller of parseAsync.
          { writeErr: () => undefined }
        : { outputError: (message, write) => write(message.split('\n').map(escapeForTerminal).join('\n')) },
    )
    .version(version, '-V, --version', 'print the version')
    .description('Branch API: run the local stack, manage API keys, read usage, load branch data.')
    .addHelpText(
      'after',
      `
Target: DYNAMODB_ENDPOINT (e.g. the one "npm start" prints) or, when unset, AWS with the default
credentials and AWS_REGION. Table names: KEYS_TABLE, USAGE_TABLE, BRANCH_DATA_TABLE, ROLLUPS_TABLE,
RATE_LIMITS_TABLE, ACTIVITY_TABLE (a deployed stack's outputs); by default the local stack's names.`,
    )
    .showHelpAfterError('(run with --help for usage)')
    // `usage --branch …` (the log) and `usage summary --branch …` both have a --branch.
    .enablePositionalOptions()
    .exitOverride();

  addServeCommands(program);
  addKeyCommands(program);
  addUsageCommands(program);
  addDataCommands(program);
  return program;
};

/** `--json` anywhere among the arguments (before a `--`) asks for JSON errors too. */
const args = process.argv.slice(2);
const jsonErrors = (args.includes('--') ? args.slice(0, args.indexOf('--')) : args).includes('--json');

try {
  await buildProgram(jsonErrors).parseAsync(process.argv);
} catch (error) {
  // Help and version exit 0; commander has printed its own message already unless JSON was asked for.
  if (error instanceof CommanderError) process.exitCode = error.exitCode;
  reportFailure(error, jsonErrors);
}
