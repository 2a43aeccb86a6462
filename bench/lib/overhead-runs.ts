/**
 * The own-overhead part runs in several processes (bench/run.ts), and each figure reported is the
 * median over them, with every process's figure beside it. Within one process the four endpoints
 * move together; between processes the same code gave 18.9 to 34.0 µs p50 (docs/performance.md
 * "Fifth round"), so one process is one sample of that spread, not the figure.
 */
import { median, round } from './stats';

interface Quantiles {
  p50: number;
  p99: number;
}

/** What one process of bench/overhead.ts prints. */
export interface OverheadRun {
  fresh: { endpoint: string; warmup: number; pairs: number; full: Quantiles; bare: Quantiles; overhead: Quantiles };
  tierUp: { pairs: number; blockPairs: number; blockP50: number[] };
  results: { endpoint: string; pairs: number; full: Quantiles; bare: Quantiles; overhead: Quantiles }[];
  /** Only from the first process: where the µs go. */
  breakdown?: {
    layers: { layer: string; extra: Quantiles }[];
    signalPerCall: { extra: Quantiles };
  };
}

const middle = (values: number[]): number => round(median(values), 2);
const quantiles = (of: Quantiles[]): Quantiles & { each: number[] } => ({
  p50: middle(of.map((one) => one.p50)),
  p99: middle(of.map((one) => one.p99)),
  each: of.map((one) => one.p50),
});

/** Each figure as the median over the runs, p50s of every run kept as `each`. */
export const combineOverheadRuns = (runs: readonly OverheadRun[]) => {
  const [first] = runs;
  if (!first) throw new Error('No own-overhead run to combine');
  const pick = <T>(of: (run: OverheadRun) => T) => runs.map(of);
  return {
    processes: runs.length,
    fresh: {
      endpoint: first.fresh.endpoint,
      warmup: first.fresh.warmup,
      pairs: Math.min(...pick((run) => run.fresh.pairs)),
      full: quantiles(pick((run) => run.fresh.full)),
      bare: quantiles(pick((run) => run.fresh.bare)),
      overhead: quantiles(pick((run) => run.fresh.overhead)),
    },
    tierUp: {
      pairs: first.tierUp.pairs,
      blockPairs: first.tierUp.blockPairs,
      blockP50: first.tierUp.blockP50.map((_, block) => middle(pick((run) => run.tierUp.blockP50[block]!))),
    },
    results: first.results.map(({ endpoint }, at) => ({
      endpoint,
      full: quantiles(pick((run) => run.results[at]!.full)),
      bare: quantiles(pick((run) => run.results[at]!.bare)),
      overhead: quantiles(pick((run) => run.results[at]!.overhead)),
    })),
    breakdown: first.breakdown,
    runs,
  };
};
