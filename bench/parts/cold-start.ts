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
import { percentile } from '../../shared/domain/percentile';
import { median, round } from '../lib/stats';

export const IMPORT_RATIO = 1.1;
const RUNS = 15;

/**
 * Imports the bundle, checks it exports a handler, prints the import's wall time and CPU time
 * (every thread of the process, V8's compiler threads included), in ms.
 */
const IMPORT_SCRIPT = `
const start = performance.now();
const cpu = process.cpuUsage();
const { handler } = await import(process.env.BENCH_IMPORT_URL);
const { user, system } = process.cpuUsage(cpu);
const ms = performance.now() - start;
if (typeof handler !== 'function') throw new Error('no handler exported');
process.stdout.write(JSON.stringify({ ms, cpuMs: (user + system) / 1000 }));
`;

interface ImportTime {
  ms: number;
  cpuMs: number;
}

const importTime = (bundle: Bundle): ImportTime =>
  JSON.parse(
    runNode(['--input-type=module', '-e', IMPORT_SCRIPT], {
      ...LAMBDA_ENV,
      BENCH_IMPORT_URL: pathToFileURL(bundle.file).href,
    }).stdout,
  ) as ImportTime;

export const runColdStart = async (outdir: string): Promise<PartResult> => {
  const functions: Bundle[] = [];
  for (const { id, entry } of [...routes, { id: 'Fallback', entry: fallbackEntry }]) {
    functions.push(await buildBundle(id, entry, outdir));
  }
  const bare = await buildBundle('BareLibraries', 'bench/bare/libraries.ts', outdir);
  const times = new Map<Bundle, ImportTime[]>([bare, ...functions].map((bundle) => [bundle, []]));
  for (let run = 0; run < RUNS; run += 1) {
    for (const [bundle, samples] of times) samples.push(importTime(bundle));
  }
  const medianOf = (bundle: Bundle, pick: keyof ImportTime) => median(times.get(bundle)!.map((one) => one[pick]));
  const kb = (bundle: Bundle) => round(bundle.bytes / 1024, 0);
  // Each run's own ratio (the bundle ÷ the bare of the same round): their spread shows the noise.
  const runRatios = (bundle: Bundle) => times.get(bundle)!.map((one, run) => one.cpuMs / times.get(bare)![run]!.cpuMs);
  const figuresOf = (bundle: Bundle) => ({
    name: bundle.name,
    kb: kb(bundle),
    wallMs: round(medianOf(bundle, 'ms'), 1),
    cpuMs: round(medianOf(bundle, 'cpuMs'), 1),
    ratio: round(medianOf(bundle, 'cpuMs') / medianOf(bare, 'cpuMs'), 2),
    runRatios: [25, 75].map((p) => round(percentile(runRatios(bundle), p)!, 2)),
  });
  const yardstick = figuresOf(bare);
  const figures = functions.map(figuresOf);
  return {
    figures: { runs: RUNS, bare: yardstick, functions: figures },
    rows: figures.map((one) => ({
      figure: `Cold start: import of ${one.name} (${one.kb} KB) ÷ the bare libraries (${yardstick.kb} KB, ${yardstick.cpuMs} ms), CPU time, median of ${RUNS}`,
      measured: `${one.ratio}× (runs ${one.runRatios.join('–')}×; ${one.cpuMs} ms; wall ${one.wallMs})`,
      target: `≤ ${IMPORT_RATIO}×`,
      met: one.ratio <= IMPORT_RATIO,
    })),
  };
};
