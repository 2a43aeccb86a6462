/** The one percentile rule (shared/domain/percentile.ts, nearest rank) and the bench's slope (bench/lib/stats.ts). */
import { median, slope } from '../bench/lib/stats';
import { percentile } from '../shared/domain/percentile';

describe('statistics', () => {
  it('takes nearest-rank percentiles without reordering the input', () => {
    const values = [5, 1, 4, 2, 3];
    expect(median(values)).toBe(3);
    expect(percentile(values, 99)).toBe(5);
    expect(percentile(values, 1)).toBe(1);
    expect(percentile(values, 0)).toBe(1);
    expect(values).toEqual([5, 1, 4, 2, 3]);
    // Even counts: the lower middle, a value that was measured, not the mean of two.
    expect(percentile([40, 10, 30, 20], 50)).toBe(20);
    expect(percentile([40, 10, 30, 20], 95)).toBe(40);
    expect(percentile([], 50)).toBeNull();
    expect(median([])).toBeNaN();
  });

  it('fits a slope through the points, and none through a single x', () => {
    expect(slope([0, 1, 2, 3], [10, 12, 14, 16])).toBeCloseTo(2);
    expect(slope([0, 1, 2, 3], [5, 5, 5, 5])).toBe(0);
    expect(slope([1, 1], [0, 9])).toBe(0);
  });
});
