/**
 * `npm run lint:size` (scripts/check-size.ts): a function over 80 lines or a file over 400 lines in
 * bin/ functions/ lib/ shared/ fails lint unless scripts/size-allowlist.json names it, and an entry
 * that no longer offends is reported as stale.
 */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  checkSizes,
  formatReport,
  measureSource,
  measureTree,
  readAllowlist,
  type Offender,
} from '../scripts/check-size';

const root = path.resolve(__dirname, '..');

/** A function whose text spans `lines` lines, first and last included. */
const functionOf = (head: string, lines: number, tail = '}'): string =>
  [`${head} {`, ...Array.from({ length: lines - 2 }, (_, i) => `  void ${i};`), tail].join('\n');

describe('measureSource', () => {
  it('reports a function of 81 lines and lets one of 80 pass', () => {
    const text = [functionOf('function longOne()', 81), functionOf('function fits()', 80)].join('\n') + '\n';
    expect(measureSource('lib/x.ts', text)).toEqual([
      { path: 'lib/x.ts', function: 'longOne', line: 1, lines: 81, limit: 80 },
    ]);
  });

  it('names arrow functions by their variable, methods and constructors by their class', () => {
    const text = [
      functionOf('export const handler = async () =>', 90, '};'),
      'class Stack {',
      functionOf('  constructor()', 85, '  }'),
      functionOf('  build()', 81, '  }'),
      '}',
      'register(',
      functionOf('  () =>', 82, '  },'),
      ');',
    ].join('\n');
    expect(measureSource('shared/y.ts', text).map(({ function: name, lines }) => [name, lines])).toEqual([
      ['handler', 90],
      ['Stack.constructor', 85],
      ['Stack.build', 81],
      ['<anonymous@260>', 82],
    ]);
  });

  it('reports a file of 401 lines and lets one of 400 pass', () => {
    const lines = (count: number) => Array.from({ length: count }, (_, i) => `export const v${i} = ${i};`).join('\n');
    expect(measureSource('bin/a.ts', `${lines(400)}\n`)).toEqual([]);
    expect(measureSource('bin/b.ts', `${lines(401)}\n`)).toEqual([
      { path: 'bin/b.ts', line: 1, lines: 401, limit: 400 },
    ]);
  });
});

describe('checkSizes', () => {
  const long: Offender = { path: 'lib/console/server.ts', function: 'startConsole', line: 9, lines: 350, limit: 80 };
  const file: Offender = { path: 'lib/openapi/document.ts', line: 1, lines: 412, limit: 400 };

  it('fails on an offender the allowlist does not name, allows one it does, and reports stale entries', () => {
    const report = checkSizes(
      [long, file],
      [
        { path: 'lib/console/server.ts', function: 'startConsole', reason: 'being split' },
        { path: 'bin/cli.ts', reason: 'split already' },
      ],
    );
    expect(report).toEqual({
      failures: [file],
      allowed: [long],
      stale: [{ path: 'bin/cli.ts', reason: 'split already' }],
    });
    expect(formatReport(report)).toEqual([
      'error  lib/openapi/document.ts: file has 412 lines (limit 400)',
      'allowed  lib/console/server.ts:9 function startConsole has 350 lines (limit 80) (scripts/size-allowlist.json)',
      'stale  bin/cli.ts is within the limits: remove it from scripts/size-allowlist.json',
    ]);
  });

  it('an allowed file does not allow its long functions', () => {
    const report = checkSizes([long], [{ path: 'lib/console/server.ts', reason: 'file only' }]);
    expect(report.failures).toEqual([long]);
  });
});

describe('measureTree', () => {
  let tree: string;
  beforeAll(() => {
    tree = mkdtempSync(path.join(tmpdir(), 'check-size-'));
    mkdirSync(path.join(tree, 'shared/api'), { recursive: true });
    mkdirSync(path.join(tree, 'test'), { recursive: true });
    writeFileSync(path.join(tree, 'shared/api/chain.ts'), functionOf('export function chain()', 81));
    writeFileSync(path.join(tree, 'shared/api/types.d.ts'), functionOf('declare function notCode()', 100));
    // test/ is not one of the checked folders.
    writeFileSync(path.join(tree, 'test/big.test.ts'), functionOf('function bigTest()', 200));
  });
  afterAll(() => rmSync(tree, { recursive: true, force: true }));

  it('reads bin/ functions/ lib/ shared/ only, and skips declaration files', () => {
    expect(measureTree(tree)).toEqual([
      { path: 'shared/api/chain.ts', function: 'chain', line: 1, lines: 81, limit: 80 },
    ]);
  });

  it('the project passes with its allowlist (what npm run lint:size checks)', () => {
    const report = checkSizes(measureTree(root), readAllowlist(path.join(root, 'scripts/size-allowlist.json')));
    expect(
      report.failures.map((offender) => formatReport({ failures: [offender], allowed: [], stale: [] })[0]),
    ).toEqual([]);
  });
});
