/**
 * Percentiles, one rule everywhere (docs/decisions.md "Percentiles"): nearest rank, the value at
 * rank ⌈p/100 × n⌉ of the n values sorted, so every percentile is a value that was measured.
 */

/** The 1-based rank of percentile `p` (0 to 100) among `count` values. */
export const nearestRank = (p: number, count: number): number =>
  Math.min(count, Math.max(1, Math.ceil((p / 100) * count)));

/** Percentile `p` (0 to 100) of the values, which are not reordered; null when there are none. */
export const percentile = (values: readonly number[], p: number): number | null =>
  values.length === 0 ? null : Float64Array.from(values).sort()[nearestRank(p, values.length) - 1]!;
