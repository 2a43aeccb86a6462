/**
 * `npm run verify:assembly` on a real synthesized assembly (bundled by the stack's own esbuild
 * settings): the project as it is passes, and each seeded defect in a mutated copy of the template
 * is reported with the resource at fault.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BranchApiStack } from '../../lib/infra/branch-api-stack';
import { verifyAssembly, type VerifyReport } from '../../lib/verify/verify-assembly';
import { newApp } from '../cdk/support';

const STACK = 'Verify';
let root: string;
let assembly: string;
let report: VerifyReport;
let template: Template;

type Template = { Resources: Record<string, { Type: string; Properties: any }> };

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'verify-assembly-test-'));
  assembly = join(root, 'cdk.out');
  const app = newApp({ bundle: true, outdir: assembly });
  new BranchApiStack(app, STACK);
  app.synth();
  template = JSON.parse(readFileSync(join(assembly, `${STACK}.template.json`), 'utf8')) as Template;
  report = await verifyAssembly(assembly);
}, 120_000);

afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A copy of the assembly with its template changed by `mutate`, verified. */
const verifyMutated = async (
  mutate: (template: Template, dir: string) => void,
  parent = root,
): Promise<VerifyReport> => {
  const copy = mkdtempSync(join(parent, 'mutated-'));
  cpSync(assembly, copy, { recursive: true });
  const file = join(copy, `${STACK}.template.json`);
  const template = JSON.parse(readFileSync(file, 'utf8')) as Template;
  mutate(template, copy);
  writeFileSync(file, JSON.stringify(template));
  return verifyAssembly(copy);
};

/** What the run found (IAM, alarms against emitted metrics, answers), without the offline checks' lines. */
const runDefects = (report: VerifyReport) => report.defects.filter((defect) => defect.check === undefined);

const idOf = (template: Template, type: string, prefix: string): string => {
  const id = Object.keys(template.Resources).find(
    (key) => key.startsWith(prefix) && template.Resources[key]!.Type === type,
  );
  if (!id) throw new Error(`No ${type} ${prefix}…`);
  return id;
};

/** Adds an Allow statement of `action` on a resource's ARN to the policy whose logical id starts with `policyPrefix`. */
const allow = (template: Template, policyPrefix: string, action: string, resource: string): void => {
  const policy = idOf(template, 'AWS::IAM::Policy', policyPrefix);
  template.Resources[policy]!.Properties.PolicyDocument.Statement.push({
    Action: action,
    Effect: 'Allow',
    Resource: { 'Fn::GetAtt': [resource, 'Arn'] },
  });
};

describe('the project as it is', () => {
  it('has no defect', () => {
    expect(report.defects).toEqual([]);
  });

  it('ran every function and saw each one make the calls its route declares', () => {
    const functions = Object.values(template.Resources).filter((r) => r.Type === 'AWS::Lambda::Function');
    expect(report.functions).toBe(functions.length);
    const ops = (prefix: string) =>
      Object.keys(Object.entries(report.operations).find(([fn]) => fn.startsWith(prefix))?.[1] ?? {}).map((op) =>
        op.replace(/Tables(\w+?)[0-9A-F]{8}/g, '$1'),
      );
    expect(ops('ListPaymentProviders').sort()).toEqual(
      [
        'dynamodb:GetItem Keys',
        'dynamodb:PutItem Usage',
        'dynamodb:Query BranchData/active-providers',
        'dynamodb:UpdateItem RateLimits',
      ].sort(),
    );
    expect(ops('GetBranch').sort()).toEqual(
      [
        'dynamodb:GetItem BranchData',
        'dynamodb:GetItem Keys',
        'dynamodb:PutItem Usage',
        'dynamodb:UpdateItem RateLimits',
      ].sort(),
    );
    expect(ops('Fallback')).toEqual([]);
    // The rollups aggregator, fed the usage records the scenario wrote through the usage table's
    // stream; a redelivered batch makes it read the item's watermark.
    expect(ops('UsageAggregation').sort()).toEqual([
      'dynamodb:GetItem UsageRollups',
      'dynamodb:UpdateItem UsageRollups',
    ]);
    expect(report.unusedGrants).toEqual([]);
  });
});

describe('seeded defects are reported', () => {
  it('an index ARN dropped from a role', async () => {
    let policy = '';
    const mutated = await verifyMutated((template) => {
      policy = idOf(template, 'AWS::IAM::Policy', 'ListPaymentProvidersRoleDefaultPolicy');
      const statements = template.Resources[policy]!.Properties.PolicyDocument.Statement as any[];
      const query = statements.find((statement) => statement.Action === 'dynamodb:Query');
      query.Resource = { 'Fn::GetAtt': [query.Resource['Fn::Join'][1][0]['Fn::GetAtt'][0], 'Arn'] };
    });
    expect(mutated.defects).toEqual(
      expect.arrayContaining([
        {
          resource: expect.stringMatching(/^ListPaymentProvidersFunction/),
          reason: expect.stringMatching(
            /calls dynamodb:Query on table .* index active-providers, which its role does not allow/,
          ),
        },
      ]),
    );
  }, 60_000);

  it('a table variable removed from a function', async () => {
    const mutated = await verifyMutated((template) => {
      const fn = idOf(template, 'AWS::Lambda::Function', 'GetBranchFunction');
      delete template.Resources[fn]!.Properties.Environment.Variables.KEYS_TABLE;
    });
    expect(mutated.defects).toEqual(
      expect.arrayContaining([
        {
          resource: expect.stringMatching(/^GetBranchFunction/),
          reason: expect.stringMatching(/fails to load: ConfigError: Missing required environment variable KEYS_TABLE/),
        },
      ]),
    );
  }, 60_000);

  it("an alarm's custom namespace renamed", async () => {
    const mutated = await verifyMutated((template) => {
      const alarm = idOf(template, 'AWS::CloudWatch::Alarm', 'MonitoringUsageRecordWriteFailed');
      template.Resources[alarm]!.Properties.Namespace = 'BranchApiRenamed';
    });
    expect(runDefects(mutated)).toEqual([
      {
        resource: expect.stringMatching(/^MonitoringUsageRecordWriteFailed/),
        reason: expect.stringMatching(
          /watches BranchApiRenamed\/UsageRecordWriteFailed \{service=branch-api\}, which the run never emitted/,
        ),
      },
    ]);
  }, 60_000);

  it('an extra write granted', async () => {
    const mutated = await verifyMutated((template) => {
      const keys = idOf(template, 'AWS::DynamoDB::Table', 'TablesKeys');
      allow(template, 'GetBranchRoleDefaultPolicy', 'dynamodb:DeleteItem', keys);
    });
    expect(mutated.defects).toEqual([
      {
        resource: expect.stringMatching(/^GetBranchRoleDefaultPolicy/),
        reason: expect.stringMatching(
          /dynamodb:DeleteItem on .*table\/verify-TablesKeys\w+ is granted but the run never used it/,
        ),
      },
    ]);
  }, 60_000);

  it('a key events grant dropped from a sender, and one given to a function that sends none', async () => {
    const mutated = await verifyMutated((template) => {
      const sender = idOf(template, 'AWS::IAM::Policy', 'GetBranchRoleDefaultPolicy');
      const statements = template.Resources[sender]!.Properties.PolicyDocument.Statement as { Action: unknown }[];
      template.Resources[sender]!.Properties.PolicyDocument.Statement = statements.filter(
        (statement) => statement.Action !== 'events:PutEvents',
      );
      allow(
        template,
        'FallbackRoleDefaultPolicy',
        'events:PutEvents',
        idOf(template, 'AWS::Events::EventBus', 'KeyEventsBus'),
      );
    });
    expect(mutated.defects).toEqual([
      {
        resource: expect.stringMatching(/^GetBranchFunction/),
        reason: expect.stringMatching(
          /sends key events to KeyEventsBus\w+ but its role may not events:PutEvents on it/,
        ),
      },
      {
        resource: expect.stringMatching(/^FallbackRole/),
        reason: 'events:PutEvents is granted but no function with this role sends key events',
      },
    ]);
  }, 60_000);

  it('the catch-all route removed', async () => {
    const mutated = await verifyMutated((template) => {
      const route = Object.keys(template.Resources).find(
        (id) =>
          template.Resources[id]!.Type === 'AWS::ApiGatewayV2::Route' &&
          template.Resources[id]!.Properties.RouteKey === '$default',
      );
      delete template.Resources[route!];
    });
    expect(mutated.defects).toEqual(
      expect.arrayContaining([
        { resource: STACK, reason: 'no route serves GET /v1/verify-no-such-path' },
        { resource: STACK, reason: expect.stringMatching(/^no route serves DELETE \/v1\//) },
      ]),
    );
  }, 60_000);

  it("a table's throttling watched but not its index's", async () => {
    const mutated = await verifyMutated((template) => {
      delete template.Resources[idOf(template, 'AWS::CloudWatch::Alarm', 'MonitoringKeysIndexbybranchThrottles')];
    });
    expect(mutated.defects).toEqual(
      ['ReadThrottleEvents', 'WriteThrottleEvents'].map((metric) => ({
        resource: expect.stringMatching(/^MonitoringKeysTableThrottles/),
        reason: expect.stringMatching(
          new RegExp(`watches ${metric} of table TablesKeys\\w+, which does not count index by-branch, and no alarm`),
        ),
      })),
    );
  }, 60_000);

  it('an AWS-service alarm without the dimension AWS publishes the metric with', async () => {
    const mutated = await verifyMutated((template) => {
      const alarm = idOf(template, 'AWS::CloudWatch::Alarm', 'MonitoringGetBranchErrors');
      template.Resources[alarm]!.Properties.Dimensions = [{ Name: 'Function', Value: 'x' }];
    });
    expect(runDefects(mutated)).toEqual([
      {
        resource: expect.stringMatching(/^MonitoringGetBranchErrors/),
        reason: expect.stringMatching(/AWS publishes it with dimensions \{FunctionName\}/),
      },
    ]);
  }, 60_000);
});

describe('the route wiring', () => {
  it('a route integrated with the function of another route is named by the usage record its call left', async () => {
    const mutated = await verifyMutated((template) => {
      const integration = idOf(template, 'AWS::ApiGatewayV2::Integration', 'ApiHttpApiGETv1branchGetBranch');
      const members = idOf(template, 'AWS::Lambda::Function', 'ListMembersFunction');
      template.Resources[integration]!.Properties.IntegrationUri = { 'Fn::GetAtt': [members, 'Arn'] };
    });
    expect(runDefects(mutated)).toContainEqual({
      resource: expect.stringMatching(/^ApiHttpApiGETv1branch/),
      reason: expect.stringMatching(/route GET \/v1\/branch reaches code that serves .*\/v1\/members/),
    });
  }, 60_000);
});

describe('a template the scenario cannot run on', () => {
  it('a changed table key schema is reported, not a crash of the seeding', async () => {
    const mutated = await verifyMutated((template) => {
      const keys = idOf(template, 'AWS::DynamoDB::Table', 'TablesBranchData');
      template.Resources[keys]!.Properties.KeySchema[1].AttributeName = 'created_at';
      template.Resources[keys]!.Properties.AttributeDefinitions.push({
        AttributeName: 'created_at',
        AttributeType: 'S',
      });
    });
    expect(mutated.defects).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ check: 'table-key-schema', resource: expect.stringMatching(/^TablesBranchData/) }),
        {
          resource: STACK,
          reason: expect.stringMatching(/^the scenario could not run on this template: .*ValidationException/),
        },
      ]),
    );
  }, 60_000);
});

describe('the code runs with what Lambda has, nothing more', () => {
  it('reports a bundle that imports a package it does not contain, even where the project has it', async () => {
    // Inside the project, as cdk.out is: plain Node resolution would find zod in the project's
    // node_modules, which Lambda does not have.
    const parent = mkdtempSync(join(__dirname, '..', '..', 'node_modules', '.cache-verify-'));
    try {
      const mutated = await verifyMutated((template, dir) => {
        const fallback = idOf(template, 'AWS::Lambda::Function', 'FallbackFunction');
        const asset = template.Resources[fallback]!.Properties.Code.S3Key.replace(/\.zip$/, '');
        writeFileSync(
          join(dir, `asset.${asset}`, 'index.mjs'),
          "import { z } from 'zod';\nexport const handler = async () => z.never();\n",
        );
      }, parent);
      expect(mutated.defects).toContainEqual({
        resource: expect.stringMatching(/^FallbackFunction/),
        reason: expect.stringMatching(/fails to load: Error: package "zod" is not in the asset/),
      });
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('background functions', () => {
  it("report a stream consumer whose role can't send to its mapping's dead-letter queue", async () => {
    const mutated = await verifyMutated((template) => {
      const policy = idOf(template, 'AWS::IAM::Policy', 'UsageAggregationAggregatorRoleDefaultPolicy');
      const document = template.Resources[policy]!.Properties.PolicyDocument;
      document.Statement = (document.Statement as any[]).filter(
        (statement) => !JSON.stringify(statement.Action).includes('sqs:SendMessage'),
      );
    });
    expect(runDefects(mutated)).toEqual([
      {
        resource: expect.stringMatching(/^UsageAggregationAggregatorFunction/),
        reason: expect.stringMatching(
          /sends failed batches to arn:aws:sqs:.*DeadLetterQueue\w+, but its role does not allow sqs:SendMessage/,
        ),
      },
    ]);
  }, 60_000);

  it("feed a function its event source mapping's table writes as stream records", async () => {
    const mutated = await verifyMutated((template) => {
      const usage = idOf(template, 'AWS::DynamoDB::Table', 'TablesUsage');
      const fallback = idOf(template, 'AWS::Lambda::Function', 'FallbackFunction');
      template.Resources[usage]!.Properties.StreamSpecification = { StreamViewType: 'NEW_IMAGE' };
      template.Resources.UsageStreamMapping = {
        Type: 'AWS::Lambda::EventSourceMapping',
        Properties: {
          FunctionName: { Ref: fallback },
          EventSourceArn: { 'Fn::GetAtt': [usage, 'StreamArn'] },
          BatchSize: 10,
        },
      };
    });
    // The usage records the scenario wrote reached the function, in batches of the mapping's size.
    expect(mutated.invocations).toBeGreaterThan(report.invocations);
    // Its role was given no stream read, which the mapping needs.
    expect(runDefects(mutated)).toEqual(
      ['DescribeStream', 'GetRecords', 'GetShardIterator'].map((action) => ({
        resource: expect.stringMatching(/^FallbackFunction/),
        reason: expect.stringMatching(
          new RegExp(`reads stream .*/stream/local, but its role does not allow dynamodb:${action}`),
        ),
      })),
    );
  }, 60_000);
});
