/**
 * cdk-nag's AwsSolutions pack (the same plugin bin/app.ts registers, which fails `cdk synth` on
 * any finding): nothing unacknowledged, and every acknowledgment is one of the reviewed few, each
 * with its reason.
 */
import { Stack, Validations } from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpUrlIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { buildStack, newApp } from './support';

const acknowledgments = (root: IConstruct): { path: string; id: string; reason: string }[] =>
  root.node.findAll().flatMap((construct) =>
    construct.node.metadata
      .filter((entry) => entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
      .flatMap((entry) =>
        Object.entries(entry.data as Record<string, string>).map(([id, reason]) => ({
          path: construct.node.path,
          id: id.replace(/^annotation::/i, ''),
          reason,
        })),
      ),
  );

describe('cdk-nag AwsSolutions', () => {
  const { stack } = buildStack();

  it('reports no unacknowledged error or warning', () => {
    const report = new AwsSolutionsChecks(stack).validateScope(stack);
    expect(
      report.violations.map((v) => `${v.severity} ${v.ruleName}: ${v.violatingResources[0]?.constructPath}`),
    ).toEqual([]);
    expect(report.success).toBe(true);
  });

  it('acknowledges only the reviewed rules, each with a reason', () => {
    const found = acknowledgments(stack);
    expect([...new Set(found.map((ack) => ack.id))].sort()).toEqual([
      'AwsSolutions-APIG4', // bearer keys are verified in the functions, not by a gateway authorizer
      'AwsSolutions-DDB3', // the rate-limit counters live one window: nothing to recover
      'AwsSolutions-IAM5[Resource::*]', // X-Ray tracing actions have no resource-level permissions
      'AwsSolutions-SQS3', // the stream consumers' dead-letter queues need no dead-letter queue of their own
    ]);
    for (const ack of found) expect(ack.reason.length).toBeGreaterThan(60);
    // One role per function acknowledges the X-Ray wildcard; nothing is acknowledged stack-wide.
    const iam5 = found.filter((ack) => ack.id.startsWith('AwsSolutions-IAM5'));
    expect(new Set(iam5.map((ack) => ack.path)).size).toBe(9);
    // The stream consumers' roles say why ListStreams (the stream event source) has no resource either.
    expect(iam5.filter((ack) => ack.reason.includes('dynamodb:ListStreams'))).toHaveLength(2);
    expect(found.every((ack) => ack.path !== stack.node.path)).toBe(true);
  });

  it('does report a route without an authorizer when nothing acknowledges it', () => {
    const bare = new Stack(newApp(), 'Bare');
    const api = new apigw.HttpApi(bare, 'Api');
    api.addRoutes({ path: '/x', integration: new HttpUrlIntegration('Url', 'https://example.com') });
    const report = new AwsSolutionsChecks(bare).validateScope(bare);
    expect(report.violations.map((v) => [v.ruleName, v.severity])).toContainEqual(['AwsSolutions-APIG4', 'error']);
  });
});
