/**
 * `npm run docs:counts [-- --check]`: writes the generated blocks (lib/infra/counts.ts: counts,
 * reserved concurrency, the operator outputs, the operator policy, the cost;
 * lib/verify/template-checks.ts: the verifier's checks) into README.md and docs/deploy.md between
 * their markers; with --check, exits 1 if either is stale.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generatedBlocks } from '../lib/infra/counts';
import { renderChecks } from '../lib/verify/template-checks';

export const COUNTED_DOCS = ['README.md', join('docs', 'deploy.md')];
const root = join(import.meta.dirname, '..');
const check = process.argv.includes('--check');
const blocks = generatedBlocks(undefined, { checks: renderChecks });
let stale = 0;
for (const doc of COUNTED_DOCS) {
  const file = join(root, doc);
  const text = readFileSync(file, 'utf8');
  const next = blocks.current(doc, text);
  if (next === undefined) {
    process.stderr.write(`error: ${doc} lacks a generated block\n`);
    process.exitCode = 1;
  } else if (next !== text) {
    stale += 1;
    if (check) process.stderr.write(`${doc}: generated blocks are stale; run npm run docs:counts\n`);
    else writeFileSync(file, next);
  }
}
if (check && stale > 0) process.exitCode = 1;
process.stdout.write(
  `${check ? 'checked' : 'wrote'} ${COUNTED_DOCS.length} docs (${stale} ${check ? 'stale' : 'updated'})\n`,
);
