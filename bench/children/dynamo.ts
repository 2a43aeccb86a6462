/**
 * The embedded DynamoDB of the end-to-end parts, in a process of its own (it is the busiest
 * process of the run): dynalite in memory, the tables, the demo seed, and BENCH_KEYS + 1 `read` keys (bench/lib/fixtures.ts).
 */
import { createOperatorContext } from '../../lib/operator/context';
import { createKey } from '../../lib/operator/keys';
import { seed } from '../../lib/operator/seed';
import { parseRateLimit } from '../../shared/domain/rate-limit';
import { startEmbeddedDynamo } from '../../lib/local/dynamo';
import { ensureTables } from '../../lib/operator/tables';
import { hashApiKey } from '../../shared/domain/api-key';
import { serveParent } from '../lib/child';
import { BENCH_KEY_RATE_LIMIT, BENCH_KEYS, demoBranch, seedFile } from '../lib/fixtures';

const dynamo = await startEmbeddedDynamo({ port: 0 });
const operator = createOperatorContext({ ...process.env, DYNAMODB_ENDPOINT: dynamo.endpoint, AWS_REGION: 'local' });
await ensureTables(operator.client, operator.tables);
await seed(operator, seedFile);
// The keys the gateway's load takes in turn (bench/lib/fixtures.ts BENCH_KEYS), and one more for
// the bare harness, whose counter writes must not use up the gateway's keys' windows.
const created = [];
for (let i = 0; i <= BENCH_KEYS; i += 1) {
  const name = `bench key ${i}`;
  created.push(
    await createKey(operator, {
      branchId: demoBranch.id,
      scopes: ['read'],
      name,
      rateLimit: parseRateLimit(BENCH_KEY_RATE_LIMIT),
    }),
  );
}
const bareKey = created.pop()!;
const [{ key, record }] = created as [(typeof created)[number]];
operator.close();

serveParent({
  endpoint: dynamo.endpoint,
  key,
  keys: created.map((one) => one.key),
  keyHash: hashApiKey(bareKey.key),
  keyId: record.key_id,
  tables: operator.tables,
});
