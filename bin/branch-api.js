#!/usr/bin/env node
// Entry point of the `branch-api` CLI: runs the build in dist/ (scripts/build.mjs, made on install
// and by `npm start`), or the TypeScript source through tsx when there is no build.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const built = join(import.meta.dirname, '..', 'dist', 'cli.mjs');
if (existsSync(built)) {
  await import(pathToFileURL(built).href);
} else {
  process.stderr.write('note: no build in dist/ (npm run build makes one); running the TypeScript source\n');
  const { register } = await import('tsx/esm/api');
  register();
  await import('./cli.ts');
}
