/**
 * The CDK app: one Branch API stack per deployment name (`-c stage=<name>`, required), checked by
 * cdk-nag's AwsSolutions pack and the stack's own (lib/infra/nag/pack.ts): an unacknowledged
 * finding fails `cdk synth`. Context options are listed in docs/deploy.md; a bad one stops the
 * synth with one line per problem, no stack trace.
 */
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { BranchApiStack } from '../lib/infra/branch-api-stack';
import { BranchApiChecks } from '../lib/infra/nag/pack';
import { contextOptionError, deployEnvironment, readAppSettings } from '../lib/infra/context';

const app = new App();
try {
  const { stage, stackProps } = readAppSettings(app.node);
  new BranchApiStack(app, `BranchApi-${stage}`, { ...stackProps, env: deployEnvironment(process.env) });
} catch (error) {
  const refused = contextOptionError(error, app.node);
  if (!refused) throw error;
  process.stderr.write(`${refused.message.replace(/^/gm, 'error: ')}\n`);
  process.exit(1);
}

Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }), new BranchApiChecks(app));
