import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { startEmbeddedDynamo } from '/work/wt/offline-proof/lib/local/dynamo';
import { readAssembly, LOCAL_REGION } from '/work/wt/offline-proof/lib/verify/assembly';
import { runOperatorProof, stackOutputs } from '/work/wt/offline-proof/lib/verify/operator-proof';
import { createRepositories } from '/work/wt/offline-proof/shared/data/repositories';
import { readSeedFile } from '/work/wt/offline-proof/lib/operator/seed';
import { DEMO_SEED_FILE } from '/work/wt/offline-proof/lib/project-paths';

const assembly = readAssembly('/tmp/op-cdk');
const dynamo = await startEmbeddedDynamo();
const raw = new DynamoDBClient({ endpoint: dynamo.endpoint, region: LOCAL_REGION, credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
for (const table of assembly.tables) {
  const { KeySchema, AttributeDefinitions, GlobalSecondaryIndexes } = table.properties;
  await raw.send(new CreateTableCommand({ TableName: table.name, KeySchema, AttributeDefinitions, BillingMode: 'PAY_PER_REQUEST', ...(GlobalSecondaryIndexes ? { GlobalSecondaryIndexes } : {}) }));
}
const seed = await readSeedFile(DEMO_SEED_FILE);
const names = Object.fromEntries(['keys','usage','branchData','rateLimits','rollups','activity'].map((n) => [n, assembly.tables.find((t) => t.logicalId.toLowerCase().includes(n.toLowerCase().replace('rollups','usagerollups').replace('activity','keyactivity')))!.name]));
console.log(names);
await createRepositories(DynamoDBDocumentClient.from(raw), names as never).branchData.putBranch(seed.branches[0]!);
const started = Date.now();
const allowAll = process.argv.includes('--all');
import { operatorPolicy } from '/work/wt/offline-proof/lib/operator/grants';
const outputs = stackOutputs(assembly); if (process.argv.includes('--no-activity')) delete outputs.ActivityTableName;
const policy = JSON.parse(JSON.stringify(operatorPolicy()));
if (process.argv.includes('--no-put')) { const st = policy.Statement.find((s: any) => s.Sid === 'ActivityTable'); st.Action = st.Action.filter((a: string) => a !== 'dynamodb:PutItem'); }
const report = await runOperatorProof({ assembly, outputs, policy, dynamoEndpoint: dynamo.endpoint, branchId: seed.branches[0]!.id, ...(allowAll ? { policy: { Version: '2012-10-17', Statement: [{ Sid: 'All', Effect: 'Allow', Action: ['*'], Resource: ['*'] }] } } : {}) });
console.log(JSON.stringify(report, null, 1), Date.now() - started, 'ms');
raw.destroy();
await dynamo.close();
