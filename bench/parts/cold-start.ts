/**
 * Cold start: each function bundled as the CDK stack bundles it, imported in a fresh Node process
 * with a Lambda-like environment, beside a bundle of the same libraries and nothing of ours
 * (bench/bare/libraries.ts). Runs are interleaved, so load on the machine falls on every bundle alike.
 */
import { pathToFileURL } from 'node:url';
import { fallbackEntry, routes } from '../../shared/api/routes';
import { buildBundle, type Bundle } from '../lib/bundle';
import { LAMBDA_ENV } from '../lib/fixtures';
import { runNode } from '../lib/processes';
import type { PartResult } from '../lib/report';
import { median, round } from '../lib/stats';

export const IMPORT_RATIO = 1.1;
const RUNS = Number(process.env.BENCH_IMPORT_RUNS ?? 15);

/** Imports the bundle, checks it exports a handler, prints the milliseconds the import took. */
const IMPORT_SCRIPT = `
const start = performance.now();
const { handler } = await import(process.env.BENCH_IMPORT_URL);
const ms = performance.now() - start;
if (typeof handler !== 'function') throw new Error('no handler exported');
process.stdout.write(String(ms));
`;

const importMs = (bundle: Bundle): number =>
  Number(
    runNode(['--input-type=module', '-e', IMPORT_SCRIPT], {
      ...LAMBDA_ENV,
      BENCH_IMPORT_URL: pathToFileURL(bundle.file).href,
    }).stdout,
  );

export const runColdStart = async (outdir: string): Promise<PartResult> => {
  const functions: Bundle[] = [];
  for (const { id, entry } of [...routes, { id: 'Fallback', entry: fallbackEntry }]) {
    functions.push(await buildBundle(id, entry, outdir));
  }
  const bare = await buildBundle('BareLibraries', 'bench/bare/libraries.ts', outdir);
  const times = new Map<Bundle, number[]>([bare, ...functions].map((bundle) => [bundle, []]));
  for (let run = 0; run < RUNS; run += 1) {
    for (const [bundle, samples] of times) samples.push(importMs(bundle));
  }
  const medianOf = (bundle: Bundle) => median(times.get(bundle)!);
  const bareMs = medianOf(bare);
  const kb = (bundle: Bundle) => round(bundle.bytes / 1024, 0);
  const figures = functions.map((bundle) => ({
    name: bundle.name,
    kb: kb(bundle),
    importMs: round(medianOf(bundle), 1),
    ratio: round(medianOf(bundle) / bareMs, 2),
  }));
  return {
    figures: { runs: RUNS, bare: { kb: kb(bare), importMs: round(bareMs, 1) }, functions: figures },
    rows: figures.map((one) => ({
      figure: `Cold start: import of ${one.name} (${one.kb} KB) ÷ the bare libraries (${kb(bare)} KB, ${round(bareMs, 1)} ms), median of ${RUNS}`,
      measured: `${one.ratio}× (${one.importMs} ms)`,
      target: `≤ ${IMPORT_RATIO}×`,
      met: one.ratio <= IMPORT_RATIO,
    })),
  };
};
