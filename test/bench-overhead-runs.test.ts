/**
 * The bench's own-overhead figures are medians over processes (bench/lib/overhead-runs.ts): each
 * figure is the middle process's, and every process's p50 stays visible beside it.
 */
import { combineOverheadRuns, type OverheadRun } from '../bench/lib/overhead-runs';

const q = (p50: number, p99 = p50 * 10) => ({ p50, p99 });
const run = (warm: [number, number], fresh: number, blocks: number[], breakdown = false): OverheadRun => ({
  fresh: { endpoint: 'GetBranch', warmup: 800, pairs: 3000, full: q(1000), bare: q(970), overhead: q(fresh) },
  tierUp: { pairs: 14_000, blockPairs: 2_000, blockP50: blocks },
  results: [
    { endpoint: 'GetBranch', pairs: 4000, full: q(900), bare: q(880), overhead: q(warm[0]) },
    { endpoint: 'ListMembers', pairs: 4000, full: q(950), bare: q(930), overhead: q(warm[1]) },
  ],
  ...(breakdown
    ? { breakdown: { layers: [{ layer: 'Middy core', extra: q(4) }], signalPerCall: { extra: q(17) } } }
    : {}),
});

describe('combineOverheadRuns', () => {
  const runs = [run([20.1, 34], 38, [40, 25], true), run([24.7, 18.9], 33, [41, 23]), run([29.9, 22.5], 40, [39, 27])];
  const combined = combineOverheadRuns(runs);

  it('reports each endpoint as the median of the processes, with every p50 beside it', () => {
    expect(combined.results.map((one) => [one.endpoint, one.overhead.p50, one.overhead.each])).toEqual([
      ['GetBranch', 24.7, [20.1, 24.7, 29.9]],
      ['ListMembers', 22.5, [34, 18.9, 22.5]],
    ]);
    expect(combined.results[0]!.overhead.p99).toBe(247);
  });

  it('takes the fresh figure and each block of the tier-up as medians too', () => {
    expect(combined.fresh.overhead.p50).toBe(38);
    expect(combined.tierUp.blockP50).toEqual([40, 25]);
  });

  it("keeps the first process's breakdown and every run as measured", () => {
    expect(combined.breakdown?.signalPerCall.extra.p50).toBe(17);
    expect(combined.runs).toHaveLength(3);
    expect(combined.processes).toBe(3);
  });

  it('refuses to report from no process at all', () => {
    expect(() => combineOverheadRuns([])).toThrow('No own-overhead run');
  });
});
