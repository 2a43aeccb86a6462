/**
 * The layer rules of .dependency-cruiser.cjs (README "Layout") fail `npm run lint` on a violation:
 * run the rule checker the lint script runs, on a fixture tree that seeds a layer violation, a
 * type-only cycle and a script importing from test/, and on the project itself.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';

const root = path.resolve(__dirname, '..');
const depcruise = (cwd: string, targets: string[]) =>
  spawnSync(
    process.execPath,
    [
      path.join(root, 'node_modules/dependency-cruiser/bin/dependency-cruiser.mjs'),
      ...targets,
      '--config',
      path.join(root, '.dependency-cruiser.cjs'),
      '--ts-config',
      path.join(root, 'tsconfig.json'),
      '--no-progress',
    ],
    { cwd, encoding: 'utf8' },
  );

describe('layer rules', () => {
  it('reports a domain file importing lambda wiring, and a type-only cycle', () => {
    const run = depcruise(path.join(root, 'test/fixtures/layers'), ['shared']);
    expect(run.status).not.toBe(0);
    expect(run.stdout).toContain('layer-domain: shared/domain/rule.ts → shared/lambda/wiring.ts');
    expect(run.stdout).toMatch(/no-circular: shared\/api\/(left|right)\.ts/);
  });

  it('reports a script importing from the tests', () => {
    const run = depcruise(path.join(root, 'test/fixtures/layers'), ['scripts']);
    expect(run.status).not.toBe(0);
    expect(run.stdout).toContain('tooling-stays-out-of-tests: scripts/load.ts → test/helper.ts');
  });

  it('finds no violation in the project', () => {
    const run = depcruise(root, ['shared', 'functions', 'lib', 'bin', 'scripts', 'bench']);
    expect(run.stdout + run.stderr).toContain('no dependency violations found');
    expect(run.status).toBe(0);
  }, 60_000);
});
