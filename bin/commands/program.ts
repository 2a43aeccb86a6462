/** The `branch-api` program: its commands (this folder), help and error output. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command, Help, type Option } from 'commander';
import { escapeForTerminal } from '../../lib/operator/terminal';
import type { TargetOptions } from '../../lib/operator/target';
import { PROJECT_ROOT } from '../../lib/project-paths';
import { addServeCommands } from './serve';
import { addKeyCommands } from './keys';
import { addUsageCommands } from './usage';
import { addDataCommands } from './data';

const { version } = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as {
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
Target: DYNAMODB_ENDPOINT (e.g. the one "npm start" prints) or, when unset, a
deployed stack with the default AWS credentials, named before the command:
--outputs outputs.json (written by cdk deploy --outputs-file) or --stack
BranchApi-prod (reads its outputs); or set KEYS_TABLE, USAGE_TABLE,
BRANCH_DATA_TABLE, ROLLUPS_TABLE, RATE_LIMITS_TABLE, ACTIVITY_TABLE and
KEY_EVENT_BUS_NAME from them. Region: --region, AWS_REGION, AWS_DEFAULT_REGION
or the profile's config, as the AWS CLI resolves it (docs/deploy.md).`,
    )
    .option('--stack <name>', 'a deployed stack: read its outputs (DescribeStacks)')
    .option('--region <region>', 'its region (sets AWS_REGION)')
    .option('--outputs <file>', 'read the outputs from a "cdk deploy --outputs-file" file')
    // The target's outputs become the environment every command and the console read.
    .hook('preAction', async (command) => {
      const { resolveTarget } = await import('../../lib/operator/target');
      Object.assign(process.env, await resolveTarget(command.opts<TargetOptions>(), process.env));
    })
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
