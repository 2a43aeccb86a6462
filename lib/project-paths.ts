/**
 * Where the project's files are, one definition each: the local stack, the verifier, the CDK code,
 * the scripts, the benchmark and the tests all read these instead of building their own paths.
 */
import { join } from 'node:path';

/** The checkout's root: function entries in shared/api/routes.ts are relative to it. */
export const PROJECT_ROOT = join(import.meta.dirname, '..');
/** The committed OpenAPI document (`npm run openapi` writes it). */
export const OPENAPI_FILE = join(PROJECT_ROOT, 'docs', 'openapi.json');
/** The README, whose error table `npm run openapi` writes. */
export const README_FILE = join(PROJECT_ROOT, 'README.md');
/** The demo data `npm start` loads, and the example of a seed file. */
export const DEMO_SEED_FILE = join(PROJECT_ROOT, 'seed', 'demo.json');
/** The `branch-api` CLI. */
export const CLI_FILE = join(PROJECT_ROOT, 'bin', 'branch-api.js');
