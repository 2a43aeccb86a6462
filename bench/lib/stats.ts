/** Small statistics helpers for the benchmark; percentiles are shared/domain/percentile.ts's. */
import { percentile } from '../../shared/domain/percentile';

export const median = (values: readonly number[]): number => percentile(values, 50) ?? Number.NaN;

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
