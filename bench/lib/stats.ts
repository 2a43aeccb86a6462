/** Small statistics helpers for the benchmark: nearest-rank percentiles and a least-squares slope. */

/** Nearest-rank percentile (p in 0..100) of the values; the input is not modified. */
export const percentile = (values: readonly number[], p: number): number => {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1]!;
};

export const median = (values: readonly number[]): number => percentile(values, 50);

export const mean = (values: readonly number[]): number =>
  values.reduce((sum, value) => sum + value, 0) / values.length;

/** Least-squares slope of y over x (units of y per unit of x). */
export const slope = (xs: readonly number[], ys: readonly number[]): number => {
  const mx = mean(xs);
  const my = mean(ys);
  let num = 0;
  let den = 0;
  xs.forEach((x, i) => {
    num += (x - mx) * (ys[i]! - my);
    den += (x - mx) ** 2;
  });
  return den === 0 ? 0 : num / den;
};

/** Rounds to `digits` decimals, for the report. */
export const round = (value: number, digits = 1): number => {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
};
