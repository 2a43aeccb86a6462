import { markdownTable } from '../../lib/markdown';

/** A line of bench/results.md: a figure as measured, its target, and whether it was met. */
export interface Row {
  figure: string;
  measured: string;
  target: string;
  /** null: reported, no target. */
  met: boolean | null;
}

/** What each part of the bench gives: its rows, and its figures for bench/results.json. */
export interface PartResult {
  rows: Row[];
  figures: unknown;
}

export const resultsTable = (rows: readonly Row[]): string =>
  markdownTable([
    ['Figure', 'Measured', 'Target', 'Met'],
    ...rows.map((row) => [row.figure, row.measured, row.target, row.met === null ? '' : row.met ? 'yes' : '**no**']),
  ]).join('\n');
