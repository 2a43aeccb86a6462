/**
 * Own overhead per request: bench/children/overhead.ts bundled as the stack bundles functions
 * (minified ESM, the SDK inside), run in a fresh Node process with a Lambda-like environment.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildBundle } from '../lib/bundle';
import { LAMBDA_ENV } from '../lib/fixtures';
import { runNode } from '../lib/processes';
import type { PartResult } from '../lib/report';

/** A guard, not a chase: a request waits milliseconds on DynamoDB. */
export const OVERHEAD_P50_US = 100;

interface Figures {
  pairs: number;
  p50: number;
  p99: number;
}

export const runOverhead = async (outdir: string): Promise<PartResult> => {
  const bundle = await buildBundle('overhead', 'bench/children/overhead.ts', outdir);
  const resultFile = join(mkdtempSync(join(tmpdir(), 'bench-overhead-')), 'result.json');
  runNode([bundle.file], { ...LAMBDA_ENV, BENCH_RESULT_FILE: resultFile }, { quiet: true });
  const result = JSON.parse(readFileSync(resultFile, 'utf8')) as {
    fresh: Figures & { endpoint: string };
    warmAfter: number;
    warm: Record<string, Figures>;
  };
  const row = (figure: string, one: Figures) => ({
    figure,
    measured: String(one.p50),
    target: `p50 ≤ ${OVERHEAD_P50_US}`,
    met: one.p50 <= OVERHEAD_P50_US,
  });
  return {
    figures: result,
    rows: [
      row(
        `Own overhead, fresh container: ${result.fresh.endpoint}, its first ${result.fresh.pairs} requests, µs p50`,
        result.fresh,
      ),
      ...Object.entries(result.warm).map(([endpoint, one]) =>
        row(`Own overhead, warm (after ${result.warmAfter} requests): ${endpoint}, ${one.pairs} requests, µs p50`, one),
      ),
    ],
  };
};
