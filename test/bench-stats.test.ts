/** The bench's statistics helpers (bench/lib/stats.ts): nearest-rank percentiles and a least-squares slope. */
import { median, percentile, slope } from '../bench/lib/stats';

describe('bench statistics', () => {
  it('takes nearest-rank percentiles without reordering the input', () => {
    const values = [5, 1, 4, 2, 3];
    expect(median(values)).toBe(3);
    expect(percentile(values, 99)).toBe(5);
    expect(percentile(values, 1)).toBe(1);
    expect(values).toEqual([5, 1, 4, 2, 3]);
    expect(percentile([], 50)).toBeNaN();
  });

  it('fits a slope through the points, and none through a single x', () => {
    expect(slope([0, 1, 2, 3], [10, 12, 14, 16])).toBeCloseTo(2);
    expect(slope([0, 1, 2, 3], [5, 5, 5, 5])).toBe(0);
    expect(slope([1, 1], [0, 9])).toBe(0);
  });
});
