/**
 * Prints, as one JSON object, the --help of every command of the `branch-api` program at a
 * terminal of 80 columns (test/cli/columns.test.ts runs it in a child process: commander is an
 * ES module the test runner does not load).
 */
import type { Command } from 'commander';
import { buildProgram } from '../../bin/commands/program';

const commandsOf = (command: Command): Command[] => [command, ...command.commands.flatMap(commandsOf)];
const nameOf = (command: Command): string =>
  command.parent ? `${nameOf(command.parent)} ${command.name()}` : command.name();

const helps: Record<string, string> = {};
for (const command of commandsOf(buildProgram())) {
  let out = '';
  command.configureOutput({ writeOut: (text) => (out += text), getOutHelpWidth: () => 80 });
  command.outputHelp();
  helps[nameOf(command)] = out;
}
process.stdout.write(JSON.stringify(helps));
