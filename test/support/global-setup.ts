/**
 * One embedded DynamoDB for the whole run; each test file gets its own tables (see env.ts). The
 * CLI is built first, so the tests that run it as a child process run the build users run.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { startEmbeddedDynamo, type EmbeddedDynamo } from '../../lib/local/dynamo';
import { PROJECT_ROOT } from '../../lib/project-paths';

declare global {
  var __embeddedDynamo: EmbeddedDynamo | undefined;
}

export default async function globalSetup(): Promise<void> {
  execFileSync(process.execPath, [join(PROJECT_ROOT, 'scripts', 'build.mjs')], { stdio: 'inherit' });
  const dynamo = await startEmbeddedDynamo();
  globalThis.__embeddedDynamo = dynamo;
  process.env.DYNAMODB_ENDPOINT = dynamo.endpoint;
}
