/**
 * `npm run docs:counts [-- --check]`: writes the generated counts (lib/infra/counts.ts) into
 * README.md and docs/deploy.md between their markers; with --check, exits 1 if either is stale.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { markers, renderCounts, stackCounts, withGenerated } from '../lib/infra/counts';
import { renderChecks } from '../lib/verify/checks/index';

export const COUNTED_DOCS = ['README.md', join('docs', 'deploy.md')];
const root = join(import.meta.dirname, '..');
const check = process.argv.includes('--check');
const counts = renderCounts(stackCounts());
const { start, end } = markers('checks');
const checks = renderChecks(start, end);
/** The doc with its generated blocks current; undefined when it has no counts block. */
const current = (doc: string, text: string) => {
  const next = withGenerated(text, 'counts', counts);
  return doc.endsWith('deploy.md') ? next && withGenerated(next, 'checks', checks) : next;
};
let stale = 0;
for (const doc of COUNTED_DOCS) {
  const file = join(root, doc);
  const text = readFileSync(file, 'utf8');
  const next = current(doc, text);
  if (next === undefined) {
    process.stderr.write(`error: ${doc} lacks a generated block\n`);
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
