/**
 * The CLI users run is the build (scripts/build.mjs, made by the global setup as on install): it
 * starts with commander alone, each command loading its implementation when it runs.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../../lib/project-paths';
import { runCli } from '../support/cli';

interface BuildMeta {
  outputs: Record<string, { imports: { path: string; kind: string; external?: boolean }[] }>;
}
const meta = JSON.parse(readFileSync(join(PROJECT_ROOT, 'dist', 'meta.json'), 'utf8')) as BuildMeta;

/** What a file of the build loads before it runs: its static imports and its chunks', transitively. */
const loadedBy = (output: string) => {
  const packages = new Set<string>();
  const files = new Set<string>();
  const visit = (file: string): void => {
    if (files.has(file)) return;
    files.add(file);
    for (const { path, kind, external } of meta.outputs[file]?.imports ?? []) {
      if (kind !== 'import-statement') continue;
      if (external) packages.add(path);
      else visit(path);
    }
  };
  visit(output);
  const onDemand = [...files].flatMap((file) => meta.outputs[file]?.imports.filter((i) => i.kind === 'dynamic-import'));
  return { packages: [...packages].filter((name) => !name.startsWith('node:')).sort(), onDemand };
};

test('the CLI loads commander alone before a command runs (no AWS SDK, zod or embedded DynamoDB)', () => {
  const { packages, onDemand } = loadedBy('dist/cli.mjs');
  expect(packages).toEqual(['commander']);
  // The commands' implementations are there, as chunks loaded when a command runs.
  expect(onDemand.length).toBeGreaterThan(0);
});

test('the tests run the built CLI, not the TypeScript source (which would print a note)', async () => {
  const { version } = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string };
  const result = await runCli(['--version']);
  expect(result).toMatchObject({ code: 0, stderr: '' });
  expect(result.stdout.trim()).toBe(version);
});
