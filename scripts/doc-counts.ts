/**
 * `npm run docs:counts [-- --check]`: writes the generated counts (lib/infra/counts.ts) into
 * README.md and docs/deploy.md between their markers; with --check, exits 1 if either is stale.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderCounts, stackCounts, withCounts } from '../lib/infra/counts';

export const COUNTED_DOCS = ['README.md', join('docs', 'deploy.md')];
const root = join(import.meta.dirname, '..');
const check = process.argv.includes('--check');
const block = renderCounts(stackCounts());
let stale = 0;
for (const doc of COUNTED_DOCS) {
  const file = join(root, doc);
  const text = readFileSync(file, 'utf8');
  const next = withCounts(text, block);
  if (next === undefined) {
    process.stderr.write(`error: ${doc} has no generated counts block\n`);
    process.exitCode = 1;
  } else if (next !== text) {
    stale += 1;
    if (check) process.stderr.write(`${doc}: counts are stale; run npm run docs:counts\n`);
    else writeFileSync(file, next);
  }
}
if (check && stale > 0) process.exitCode = 1;
process.stdout.write(
  `${check ? 'checked' : 'wrote'} ${COUNTED_DOCS.length} docs (${stale} ${check ? 'stale' : 'updated'})\n`,
);
