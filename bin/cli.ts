/**
 * `branch-api`: the operator CLI (keys, usage, seed, tables), the local stack (`serve`) and the
 * settings console (`console`). Each command group lives in bin/commands/. Every command prints
 * readable text by default and JSON with --json; a failure exits non-zero with one line on stderr,
 * or with --json the object `{"error":{"code","message"}}` with a stable code (docs/decisions.md
 * "Operator errors").
 */
import { CommanderError } from 'commander';
import { buildProgram } from './commands/program';
import { reportFailure } from './commands/failure';

/** `--json` anywhere among the arguments (before a `--`) asks for JSON errors too. */
const args = process.argv.slice(2);
const jsonErrors = (args.includes('--') ? args.slice(0, args.indexOf('--')) : args).includes('--json');

try {
  await buildProgram(jsonErrors).parseAsync(process.argv);
} catch (error) {
  // Help and version exit 0; commander has printed its own message already unless JSON was asked for.
  if (error instanceof CommanderError) process.exitCode = error.exitCode;
  await reportFailure(error, jsonErrors);
}
