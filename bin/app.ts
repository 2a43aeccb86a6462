/**
 * The CDK app: one Branch API stack per deployment name (`-c stage=<name>`, default `prod`),
 * checked by cdk-nag's AwsSolutions pack (an unacknowledged finding fails `cdk synth`).
 * Context options are listed in docs/deploy.md.
 */
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { BranchApiStack } from '../lib/infra/branch-api-stack';
import { deployEnvironment, readAppSettings } from '../lib/infra/context';

const app = new App();
const { stage, stackProps } = readAppSettings(app.node);

new BranchApiStack(app, `BranchApi-${stage}`, {
  ...stackProps,
  env: deployEnvironment(process.env),
});

Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
