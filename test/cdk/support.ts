/**
 * Builds the stack as `cdk synth` does: with the feature flags and context of cdk.json, so the
 * template under test is the one that gets deployed. Bundling is skipped unless asked for, and
 * so is CDK's built-in CloudFormation schema validation (≈5 s per synth here): `npm run synth`
 * runs it, with cdk-nag, on every CI run.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { App, type CfnElement } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { BranchApiStack, type BranchApiStackProps } from '../../lib/infra/branch-api-stack';

const cdkJson = JSON.parse(readFileSync(path.join(import.meta.dirname, '..', '..', 'cdk.json'), 'utf8')) as {
  context: Record<string, unknown>;
};

export const cdkContext = cdkJson.context;

export const newApp = (options: { bundle?: boolean; outdir?: string; context?: Record<string, unknown> } = {}) =>
  new App({
    builtinCloudFormationValidation: false,
    ...(options.outdir ? { outdir: options.outdir } : {}),
    context: {
      ...cdkContext,
      ...(options.bundle ? {} : { 'aws:cdk:bundling-stacks': [] }),
      ...options.context,
    },
  });

export const buildStack = (props: BranchApiStackProps = {}) => {
  const app = newApp();
  const stack = new BranchApiStack(app, 'Test', props);
  return { app, stack, template: Template.fromStack(stack) };
};

/** The logical id CloudFormation knows a construct's main resource by. */
export const logicalId = (construct: IConstruct): string => {
  const element = construct.node.defaultChild as CfnElement;
  return element.stack.getLogicalId(element);
};

type Resource = { Type: string; Properties?: any; DeletionPolicy?: string; UpdateReplacePolicy?: string };

export const resourcesOfType = (template: Template, type: string): Record<string, Resource> =>
  template.findResources(type) as Record<string, Resource>;

export const asArray = <T>(value: T | T[]): T[] => (Array.isArray(value) ? value : [value]);

/** What a role's policies allow: its actions (sorted, once each) and the resources of one action. */
export const roleGrants = (template: Template, role: IConstruct) => {
  type Statement = { Action: string | string[]; Resource: unknown };
  const statements: Statement[] = Object.values(resourcesOfType(template, 'AWS::IAM::Policy'))
    .filter((policy) => policy.Properties.Roles.some((ref: { Ref: string }) => ref.Ref === logicalId(role)))
    .flatMap((policy) => policy.Properties.PolicyDocument.Statement);
  return {
    actions: [...new Set(statements.flatMap((s) => asArray(s.Action)))].sort(),
    allowed: (action: string) =>
      statements.filter((s) => asArray(s.Action).includes(action)).flatMap((s) => asArray(s.Resource)),
  };
};

/** What the role of every stream consumer holds beside its own calls: its stream, its logs and traces, its dead letters. */
const STREAM_CONSUMER_ACTIONS = [
  'dynamodb:DescribeStream',
  'dynamodb:GetRecords',
  'dynamodb:GetShardIterator',
  'dynamodb:ListStreams',
  'logs:CreateLogStream',
  'logs:PutLogEvents',
  'sqs:GetQueueAttributes',
  'sqs:GetQueueUrl',
  'sqs:SendMessage',
  'xray:PutTelemetryRecords',
  'xray:PutTraceSegments',
];

/** A stream consumer's actions with its own calls, sorted as roleGrants lists them. */
export const streamConsumerActions = (...own: string[]): string[] => [...STREAM_CONSUMER_ACTIONS, ...own].sort();
