/**
 * The embedded DynamoDB of the end-to-end parts, in a process of its own (it is the busiest
 * process of the run): dynalite in memory, the tables, the demo seed, and one `read` key.
 */
import { createOperatorContext } from '../../lib/operator/context';
import { createKey, seed } from '../../lib/operator/operations';
import { startEmbeddedDynamo } from '../../lib/local/dynamo';
import { ensureTables } from '../../lib/operator/tables';
import { hashApiKey } from '../../shared/domain/api-key';
import { serveParent } from '../lib/child';
import { demoBranch, seedFile } from '../lib/fixtures';

const dynamo = await startEmbeddedDynamo({ port: 0 });
const operator = createOperatorContext({ ...process.env, DYNAMODB_ENDPOINT: dynamo.endpoint, AWS_REGION: 'local' });
await ensureTables(operator.client, operator.tables);
await seed(operator, seedFile);
// A limit far above the bench's rate: every call is counted (the UpdateItem runs) and admitted.
const { key, record } = await createKey(operator, {
  branchId: demoBranch.id,
  scopes: 'read',
  name: 'bench key',
  rateLimit: '1000000/s',
});
operator.close();

serveParent({
  endpoint: dynamo.endpoint,
  key,
  keyHash: hashApiKey(key),
  keyId: record.key_id,
  tables: operator.tables,
});
