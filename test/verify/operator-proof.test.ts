/**
 * The operator proof (lib/verify/operator-proof.ts) catches what would fail an operator on a
 * deployed stack: an output the stack does not hand over, and a grant the policy lacks, each named
 * by a DEFECT line. Run on the stack's template and tables, without the functions' run: the
 * verifier's own test (verify-assembly.test.ts) shows the project as it is passes it.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { startEmbeddedDynamo } from '../../lib/local/dynamo';
import { OPERATOR_GRANTS, operatorPolicy, type PolicyDocument } from '../../lib/operator/grants';
import { readSeedFile } from '../../lib/operator/seed';
import { DEMO_SEED_FILE } from '../../lib/project-paths';
import { assemblyOf, LOCAL_REGION, type Assembly } from '../../lib/verify/assembly';
import { runOperatorProof } from '../../lib/verify/operator-proof';
import { tableNamesOf } from '../../lib/verify/scenario';
import { createTemplateTables } from '../../lib/verify/verify-assembly';
import { createRepositories } from '../../shared/data/repositories';
import { buildStack } from '../cdk/support';

let dynamo: Awaited<ReturnType<typeof startEmbeddedDynamo>>;
let assembly: Assembly;
let branchId: string;

beforeAll(async () => {
  assembly = assemblyOf('Proof', buildStack().template.toJSON(), '');
  dynamo = await startEmbeddedDynamo();
  const raw = new DynamoDBClient({
    endpoint: dynamo.endpoint,
    region: LOCAL_REGION,
    credentials: { accessKeyId: 'verify', secretAccessKey: 'verify' },
  });
  try {
    await createTemplateTables(raw, assembly);
    const branch = (await readSeedFile(DEMO_SEED_FILE)).branches[0]!;
    await createRepositories(DynamoDBDocumentClient.from(raw), tableNamesOf(assembly)!).branchData.putBranch(branch);
    branchId = branch.id;
  } finally {
    raw.destroy();
  }
}, 60_000);

afterAll(async () => dynamo?.close());

const prove = (options: { outputs?: Record<string, string>; policy?: PolicyDocument }) =>
  runOperatorProof({ assembly, dynamoEndpoint: dynamo.endpoint, branchId, ...options });

it('reports an output the stack does not hand over by its name and variable, for every command', async () => {
  const { ActivityTableName: _removed, ...outputs } = assembly.outputs;
  const report = await prove({ outputs });
  expect(report.defects).toEqual([
    {
      check: 'operator-proof',
      resource: expect.any(String),
      reason: expect.stringMatching(
        /^failed: Not configured for a deployed stack: ACTIVITY_TABLE \(stack output ActivityTableName\) not set\. Run with --stack/,
      ),
    },
  ]);
  // Every command failed alike, before it asked anything.
  expect(report.defects[0]!.resource.split(', ').sort()).toEqual(Object.keys(OPERATOR_GRANTS).sort());
  expect(report.requests).toBe(0);
}, 60_000);

it('reports a grant the policy lacks by its action and table, and the commands it fails', async () => {
  const base = operatorPolicy();
  const policy: PolicyDocument = {
    ...base,
    Statement: base.Statement.map((statement) =>
      statement.Sid === 'ActivityTable'
        ? { ...statement, Action: statement.Action.filter((action) => action !== 'dynamodb:PutItem') }
        : statement,
    ),
  };
  const report = await prove({ policy });
  const denied = report.defects.filter((defect) => defect.reason.startsWith('denied'));
  expect(denied).toEqual([
    {
      check: 'operator-proof',
      resource: expect.stringContaining('keys create'),
      reason: expect.stringMatching(
        /^denied dynamodb:PutItem on ActivityTableName \(arn:aws:dynamodb:us-east-1:000000000000:table\/verify-TablesKeyActivity\w+\): the operator policy does not allow it$/,
      ),
    },
  ]);
  // The action that could not copy its entry warns, and fails the proof.
  expect(report.defects).toContainEqual({
    check: 'operator-proof',
    resource: expect.stringContaining('keys create'),
    reason: expect.stringMatching(/^failed: key key_[\w-]+ created, but its activity entry is not written yet/),
  });
  // The key's later actions take effect, each warning that the entries still wait, naming what was denied.
  expect(report.defects).toContainEqual({
    check: 'operator-proof',
    resource: expect.stringContaining('keys disable'),
    reason: expect.stringMatching(
      /^failed: key key_[\w-]+ created, but its activity entry is not written yet \(DynamoDB denied dynamodb:PutItem on table verify-TablesKeyActivity\w+/,
    ),
  });
}, 60_000);
