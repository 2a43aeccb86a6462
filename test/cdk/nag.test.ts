/**
 * The cdk-nag packs bin/app.ts registers, which fail `cdk synth` on any finding: AwsSolutions and
 * the stack's own (lib/infra/nag/pack.ts). Nothing unacknowledged, every acknowledgment one of the
 * reviewed few with its reason, and a defect made in the stack's code named by its rule.
 */
import { Stack, Validations } from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpUrlIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type { CfnTable } from 'aws-cdk-lib/aws-dynamodb';
import type { CfnFunction } from 'aws-cdk-lib/aws-lambda';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { BranchApiStack } from '../../lib/infra/branch-api-stack';
import { BranchApiChecks, findingsOf } from '../../lib/infra/nag/pack';
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
      'BranchApi-table-point-in-time-recovery', // the rate-limit counters, as DDB3
      'BranchApi-table-retention', // the same counters: nothing to keep once the stack goes
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

describe("the stack's own pack (BranchApi)", () => {
  const findings = (stack: IConstruct) => findingsOf(new BranchApiChecks().validateScope(stack));

  it('finds nothing on the stack as built, by default and with reservations and a throwaway stage', () => {
    expect(findings(buildStack().stack)).toEqual([]);
    const asked = buildStack({ destroyData: true, reservedConcurrency: { endpoint: 50, keyActions: 2 } });
    expect(findings(asked.stack)).toEqual([]);
  });

  it("names a defect made in the stack's code by its rule, and fails the synth", () => {
    const app = newApp();
    const stack = new BranchApiStack(app, 'Defective');
    // A construct that reserves what nobody asked (the finisher's former fixed 2), and a table without recovery.
    (stack.keyActionsStream.function.function.node.defaultChild as CfnFunction).reservedConcurrentExecutions = 2;
    (stack.tables.keys.node.defaultChild as CfnTable).pointInTimeRecoverySpecification = {
      pointInTimeRecoveryEnabled: false,
    };
    expect(findings(stack)).toEqual([
      {
        rule: 'table-point-in-time-recovery',
        reason: 'point-in-time recovery is off',
        paths: ['Defective/Tables/Keys/Resource'],
      },
      {
        rule: 'function-reserved-concurrency',
        reason: 'reserves 2, but -c reservedConcurrencyKeyActions asked none',
        paths: ['Defective/KeyActionsStream/Finisher/Function/Resource'],
      },
    ]);
    Validations.of(app).addPlugins(new BranchApiChecks(app));
    expect(() => app.synth()).toThrow(/ERROR point-in-time recovery is off \(BranchApi\)/);
  });
});
