/** One embedded DynamoDB for the whole run; each test file gets its own tables (see env.ts). */
import { startEmbeddedDynamo, type EmbeddedDynamo } from '../../lib/local/dynamo';

declare global {
  var __embeddedDynamo: EmbeddedDynamo | undefined;
}

export default async function globalSetup(): Promise<void> {
  const dynamo = await startEmbeddedDynamo();
  globalThis.__embeddedDynamo = dynamo;
  process.env.DYNAMODB_ENDPOINT = dynamo.endpoint;
}
