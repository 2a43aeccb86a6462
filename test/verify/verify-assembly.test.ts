/**
 * `npm run verify:assembly` on a real synthesized assembly (bundled by the stack's own esbuild
 * settings): the project as it is passes, operator proof included, and each seeded defect in a
 * mutated copy of the template is reported with the resource at fault. The whole run happens
 * once; a defect the run's checks find from what it saw (IAM, alarms, key events grants) is seeded
 * into a copy of the template checked against the same observations, one the code's run must show
 * (loading, routing, stream feeding) gets a run of its own, several seeded together where they
 * are independent, and a function that fails to load is started alone.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BranchApiStack } from '../../lib/infra/branch-api-stack';
import { OPERATOR_GRANTS } from '../../lib/operator/grants';
import { assemblyOf, readAssembly } from '../../lib/verify/assembly';
import { startFunction } from '../../lib/verify/function-host';
import { checkObserved, verifyAssembly, type VerifyReport } from '../../lib/verify/verify-assembly';
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
}, 300_000);

afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A copy of the assembly with its template changed by `mutate`; its directory. */
const mutatedCopy = (mutate: (template: Template, dir: string) => void, parent = root): string => {
  const copy = mkdtempSync(join(parent, 'mutated-'));
  cpSync(assembly, copy, { recursive: true });
  const file = join(copy, `${STACK}.template.json`);
  const template = JSON.parse(readFileSync(file, 'utf8')) as Template;
  mutate(template, copy);
  writeFileSync(file, JSON.stringify(template));
  return copy;
};

/** A copy of the assembly with its template changed by `mutate`, run by the verifier (no operator proof). */
const verifyMutated = async (mutate: (template: Template, dir: string) => void): Promise<VerifyReport> =>
  verifyAssembly(mutatedCopy(mutate), undefined, { operatorProof: false });

/** The defects the run's own checks find in a changed template, against what the one run saw. */
const checkMutated = (mutate: (template: Template) => void) => {
  const copy = structuredClone(template);
  mutate(copy);
  return checkObserved(assemblyOf(STACK, copy, assembly), report.observed);
};

/** One function of a changed copy, started alone: what its loading reports. */
const loadMutated = async (prefix: string, mutate: (template: Template, dir: string) => void, parent = root) => {
  const dir = mutatedCopy(mutate, parent);
  const fn = readAssembly(dir).functions.find((candidate) => candidate.logicalId.startsWith(prefix))!;
  // Never called: a function that fails to load makes no call.
  const host = await startFunction(fn, 'http://127.0.0.1:9');
  await host.close();
  return host.importError;
};

/** What the run found (IAM, alarms against emitted metrics, answers), without the template checks' lines. */
const RUN_CHECKS = [undefined, 'iam', 'alarm-metrics'];
const runDefects = (report: VerifyReport) => report.defects.filter((defect) => RUN_CHECKS.includes(defect.check));

/** The statements of the policy whose logical id starts with `prefix`. */
const statementsOf = (template: Template, prefix: string): any[] =>
  template.Resources[idOf(template, 'AWS::IAM::Policy', prefix)]!.Properties.PolicyDocument.Statement;

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
  });

  it('ran every operator command and console page on the stack outputs alone, refused nothing', () => {
    expect(report.operatorProof).toEqual(
      expect.objectContaining({ commands: 13, pages: 2, requests: expect.any(Number) }),
    );
    expect(Object.keys(report.operatorProof!.operations).sort()).toEqual(Object.keys(OPERATOR_GRANTS).sort());
  });
});

describe('seeded defects are reported from what the run saw', () => {
  it('an index ARN dropped from a role', () => {
    const defects = checkMutated((template) => {
      const policy = idOf(template, 'AWS::IAM::Policy', 'ListPaymentProvidersRoleDefaultPolicy');
      const statements = template.Resources[policy]!.Properties.PolicyDocument.Statement as any[];
      const query = statements.find((statement) => statement.Action === 'dynamodb:Query');
      query.Resource = { 'Fn::GetAtt': [query.Resource['Fn::Join'][1][0]['Fn::GetAtt'][0], 'Arn'] };
    });
    expect(defects).toEqual(
      expect.arrayContaining([
        {
          check: 'iam',
          resource: expect.stringMatching(/^ListPaymentProvidersFunction/),
          reason: expect.stringMatching(
            /calls dynamodb:Query on table .* index active-providers, which its role does not allow/,
          ),
        },
      ]),
    );
  });

  it("an alarm's custom namespace renamed", () => {
    const defects = checkMutated((template) => {
      const alarm = idOf(template, 'AWS::CloudWatch::Alarm', 'MonitoringUsageRecordWriteFailed');
      template.Resources[alarm]!.Properties.Namespace = 'BranchApiRenamed';
    });
    expect(defects).toEqual([
      {
        check: 'alarm-metrics',
        resource: expect.stringMatching(/^MonitoringUsageRecordWriteFailed/),
        reason: expect.stringMatching(
          /watches BranchApiRenamed\/UsageRecordWriteFailed \{service=branch-api\}, which the run never emitted/,
        ),
      },
    ]);
  });

  it('an extra write granted', () => {
    const defects = checkMutated((template) => {
      const keys = idOf(template, 'AWS::DynamoDB::Table', 'TablesKeys');
      allow(template, 'GetBranchRoleDefaultPolicy', 'dynamodb:DeleteItem', keys);
    });
    expect(defects).toEqual([
      {
        check: 'iam',
        resource: expect.stringMatching(/^GetBranchRoleDefaultPolicy/),
        reason: expect.stringMatching(
          /dynamodb:DeleteItem on .*table\/verify-TablesKeys\w+ is granted but the run never used it/,
        ),
      },
    ]);
  });
});

describe('permissions judged as IAM judges them (seeded into the template, checked against the run)', () => {
  const arnOf = (template: Template, prefix: string) => ({
    'Fn::GetAtt': [idOf(template, 'AWS::DynamoDB::Table', prefix), 'Arn'],
  });

  it('an explicit Deny wins over the Allow beside it', () => {
    const defects = checkMutated((template) =>
      statementsOf(template, 'GetBranchRoleDefaultPolicy').push({
        Effect: 'Deny',
        Action: 'dynamodb:GetItem',
        Resource: arnOf(template, 'TablesKeys'),
      }),
    );
    expect(defects).toEqual([
      {
        check: 'iam',
        resource: expect.stringMatching(/^GetBranchFunction/),
        reason: expect.stringMatching(
          /^calls dynamodb:GetItem on table verify-TablesKeys\w+, which its role does not allow: denied by Deny dynamodb:GetItem in GetBranchRoleDefaultPolicy\w+ statement 7$/,
        ),
      },
    ]);
  });

  it('a Deny with NotAction denies every action but those it names', () => {
    const defects = checkMutated((template) =>
      statementsOf(template, 'ListMembersRoleDefaultPolicy').push({
        Effect: 'Deny',
        NotAction: ['dynamodb:GetItem', 'dynamodb:Query', 'events:PutEvents'],
        Resource: '*',
      }),
    );
    expect(defects).toEqual(
      ['UpdateItem on table verify-TablesRateLimits', 'PutItem on table verify-TablesUsage'].map((call) => ({
        check: 'iam',
        resource: expect.stringMatching(/^ListMembersFunction/),
        reason: expect.stringMatching(
          new RegExp(
            `^calls dynamodb:${call}\\w+, which its role does not allow: denied by Deny every action but dynamodb:GetItem`,
          ),
        ),
      })),
    );
  });

  it('an Allow with NotAction grants more than any run can show it uses', () => {
    const defects = checkMutated((template) =>
      statementsOf(template, 'FallbackRoleDefaultPolicy').push({ Effect: 'Allow', NotAction: 'iam:*', Resource: '*' }),
    );
    expect(defects).toEqual([
      {
        check: 'iam',
        resource: expect.stringMatching(/^FallbackRoleDefaultPolicy/),
        reason: expect.stringMatching(/statement 3 allows by exclusion \(NotAction\/NotResource\)/),
      },
    ]);
  });

  it('a wildcard resource covers tables the run never used the action on', () => {
    const defects = checkMutated((template) => {
      const getItem = statementsOf(template, 'GetBranchRoleDefaultPolicy').find((s) => s.Action === 'dynamodb:GetItem');
      getItem.Resource = '*';
    });
    expect(defects).toEqual([
      {
        check: 'iam',
        resource: expect.stringMatching(/^GetBranchRoleDefaultPolicy/),
        reason: expect.stringMatching(
          /^dynamodb:GetItem on \* is granted on .*TablesUsage\w+, .*, which the run never used it on/,
        ),
      },
    ]);
  });

  it('a condition the run cannot evaluate is reported, not taken as allowed', () => {
    const defects = checkMutated((template) => {
      const update = statementsOf(template, 'GetBranchRoleDefaultPolicy').find(
        (s) => s.Action === 'dynamodb:UpdateItem',
      );
      update.Condition = { StringEquals: { 'aws:SourceVpce': 'vpce-0123' } };
    });
    expect(defects).toEqual([
      {
        check: 'iam',
        resource: expect.stringMatching(/^GetBranchFunction/),
        reason: expect.stringMatching(
          /UpdateItem on table verify-TablesRateLimits\w+, which its role does not allow: .* allows it only under a condition the run can't evaluate \(aws:SourceVpce\)/,
        ),
      },
    ]);
  });
});

describe('the code runs with what Lambda has, nothing more', () => {
  it('a table variable removed from a function fails its loading', async () => {
    const importError = await loadMutated('GetBranchFunction', (template) => {
      const fn = idOf(template, 'AWS::Lambda::Function', 'GetBranchFunction');
      delete template.Resources[fn]!.Properties.Environment.Variables.KEYS_TABLE;
    });
    expect(importError).toMatch(/^ConfigError: Missing required environment variable KEYS_TABLE/);
  }, 30_000);

  it('reports a bundle that imports a package it does not contain, even where the project has it', async () => {
    // Inside the project, as cdk.out is: plain Node resolution would find zod in the project's
    // node_modules, which Lambda does not have.
    const parent = mkdtempSync(join(__dirname, '..', '..', 'node_modules', '.cache-verify-'));
    try {
      const importError = await loadMutated(
        'FallbackFunction',
        (template, dir) => {
          const fallback = idOf(template, 'AWS::Lambda::Function', 'FallbackFunction');
          const asset = template.Resources[fallback]!.Properties.Code.S3Key.replace(/\.zip$/, '');
          writeFileSync(
            join(dir, `asset.${asset}`, 'index.mjs'),
            "import { z } from 'zod';\nexport const handler = async () => z.never();\n",
          );
        },
        parent,
      );
      expect(importError).toMatch(/^Error: package "zod" is not in the asset/);
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  }, 30_000);
});

describe('seeded defects the run itself shows, in one run', () => {
  let mutated: VerifyReport;

  beforeAll(async () => {
    mutated = await verifyMutated((template) => {
      // The catch-all route removed.
      const route = Object.keys(template.Resources).find(
        (id) =>
          template.Resources[id]!.Type === 'AWS::ApiGatewayV2::Route' &&
          template.Resources[id]!.Properties.RouteKey === '$default',
      );
      delete template.Resources[route!];
      // A route integrated with the function of another route.
      const integration = idOf(template, 'AWS::ApiGatewayV2::Integration', 'ApiHttpApiGETv1branchGetBranch');
      const members = idOf(template, 'AWS::Lambda::Function', 'ListMembersFunction');
      template.Resources[integration]!.Properties.IntegrationUri = { 'Fn::GetAtt': [members, 'Arn'] };
      // The usage table's stream fed to a function whose role may not read it.
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
  }, 180_000);

  it('reports each of them and what follows from it, nothing else', () => {
    expect(runDefects(mutated)).toEqual([
      { resource: STACK, reason: 'no route serves GET /v1/verify-no-such-path' },
      { resource: STACK, reason: expect.stringMatching(/^no route serves DELETE \/v1\//) },
      {
        resource: expect.stringMatching(/^ApiHttpApiGETv1branch/),
        reason: expect.stringMatching(/route GET \/v1\/branch reaches code that serves .*\/v1\/members/),
      },
      // The function no route reaches any more made none of the calls its role grants.
      ...[
        'GetItem on .*table/verify-TablesBranchData',
        'GetItem on .*table/verify-TablesKeys',
        'PutItem on .*table/verify-TablesUsage',
        'UpdateItem on .*table/verify-TablesRateLimits',
      ].map((grant) => ({
        check: 'iam',
        resource: expect.stringMatching(/^GetBranchRoleDefaultPolicy/),
        reason: expect.stringMatching(
          new RegExp(`^dynamodb:${grant}\\w+ is granted but the run never used it \\(function GetBranchFunction`),
        ),
      })),
    ]);
    // A role that can't read the stream its mapping reads is the template's defect (the nag rule's).
    expect(mutated.defects).toContainEqual({
      check: 'stream-permissions',
      resource: 'UsageStreamMapping',
      reason: expect.stringMatching(
        /^its function's role may not dynamodb:DescribeStream on TablesUsage\w+\.StreamArn/,
      ),
    });
  });

  it("fed a function its event source mapping's table writes as stream records", () => {
    // The usage records the scenario wrote reached the function, in batches of the mapping's size.
    expect(mutated.invocations).toBeGreaterThan(report.invocations);
  });
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
  }, 180_000);
});
