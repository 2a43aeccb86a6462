/** `branch-api serve` (the local stack, `npm start`) and `branch-api console` (the settings pages). */
import { Option, type Command } from 'commander';
import type { ServeOptions } from '../../lib/local/serve';
import type { ConsoleCommandOptions } from '../../lib/console/command';
import { DEMO_SEED_FILE } from '../../lib/project-paths';
import { LOCAL_API_PORT, LOCAL_CONSOLE_PORT, LOCAL_DYNAMODB_PORT, LOCAL_HOST } from '../../lib/local-defaults';
import { port } from './kit';

/** A port option: `--flags <port>`, from `env` when not given, else `fallback`. */
const portOption = (flags: string, description: string, env: string, fallback: number): Option =>
  new Option(flags, description).env(env).default(fallback).argParser(port);

export const addServeCommands = (program: Command): void => {
  program
    .command('serve')
    .description('Start the local stack: embedded DynamoDB, demo data, a demo key, the API on http://HOST:PORT/api')
    .addOption(portOption('--port <port>', 'HTTP port', 'PORT', LOCAL_API_PORT))
    .addOption(new Option('--host <host>', 'HTTP host').env('HOST').default(LOCAL_HOST))
    .addOption(portOption('--dynamodb-port <port>', 'embedded DynamoDB port', 'DYNAMODB_PORT', LOCAL_DYNAMODB_PORT))
    .addOption(new Option('--dynamodb-endpoint <url>', 'use this DynamoDB instead').env('DYNAMODB_ENDPOINT'))
    .option('--data-dir <dir>', 'keep the embedded DynamoDB data in this directory across restarts')
    .addOption(new Option('--seed <file>', 'seed file to load').default(DEMO_SEED_FILE, 'seed/demo.json'))
    .addOption(
      portOption('--console-port <port>', 'settings console port (on 127.0.0.1)', 'CONSOLE_PORT', LOCAL_CONSOLE_PORT),
    )
    .addOption(
      new Option(
        '--log-file <path>',
        'where request and aggregator logs go (default: branch-api.log in --data-dir or a temporary directory)',
      ).env('LOG_FILE'),
    )
    .option('--verbose', 'write request and aggregator logs to the terminal too (default: to the log file only)')
    // The stack and the console load when their command runs, not for every command.
    .action(async (options: ServeOptions) => (await import('../../lib/local/serve')).serve(options));

  program
    .command('console')
    .description('Start the settings console: the "API keys" and "API usage" pages in a browser')
    .addOption(portOption('--port <port>', 'HTTP port', 'CONSOLE_PORT', LOCAL_CONSOLE_PORT))
    .addOption(
      new Option('--host <host>', 'address to listen on (anything but loopback is reachable from the network)').default(
        LOCAL_HOST,
      ),
    )
    .option('--branch <id...>', 'branches to list on the home page')
    .action(async (options: ConsoleCommandOptions) =>
      (await import('../../lib/console/command')).runConsoleCommand(options),
    );
};
