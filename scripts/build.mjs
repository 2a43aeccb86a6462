/**
 * Builds the `branch-api` CLI (and the local stack and console it starts) into dist/cli.mjs, so a
 * command runs JavaScript instead of compiling TypeScript at every call. Runs on install
 * (`prepare`), before `npm start` (`prestart`), and in the tests' global setup; about a second.
 */
import { writeFileSync } from 'node:fs';
import { build } from 'esbuild';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');

const { metafile } = await build({
  absWorkingDir: root,
  entryPoints: { cli: 'bin/cli.ts' },
  outdir: 'dist',
  outExtension: { '.js': '.mjs' },
  bundle: true,
  // A command's implementation is its own chunk, loaded when it runs: `--version` and `--help` load none.
  splitting: true,
  // Chunks beside cli.mjs: lib/project-paths.ts finds the root one folder up, from lib/ and dist/ alike.
  chunkNames: '[name]-[hash]',
  platform: 'node',
  format: 'esm',
  target: 'node20',
  // Dependencies load from node_modules as they are: only the project's own code is bundled.
  packages: 'external',
  sourcemap: 'linked',
  logLevel: 'warning',
  metafile: true,
});
// What each file of the build imports, and how: test/cli/build.test.ts checks what `--version` loads.
writeFileSync(join(root, 'dist', 'meta.json'), JSON.stringify(metafile));
