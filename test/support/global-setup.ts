/**
 * The CLI is built first, so the tests that run it as a child process run the build users run.
 * Each test file gets its own embedded DynamoDB (environment.ts).
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../../lib/project-paths';

export default function globalSetup(): void {
  execFileSync(process.execPath, [join(PROJECT_ROOT, 'scripts', 'build.mjs')], { stdio: 'inherit' });
}
