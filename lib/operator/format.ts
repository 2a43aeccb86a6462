import { displayWidth, escapeForTerminal, TerminalText } from './terminal';

/** Narrowest a column is cut to when a table must fit the terminal. */
const MIN_COLUMN = 6;
const GAP = 2;

/** Column widths that fit `maxWidth` (when they can), taking from the widest column each time. */
const fitWidths = (widths: number[], maxWidth: number | undefined): number[] => {
  if (maxWidth === undefined) return widths;
  const fitted = [...widths];
  const total = () => fitted.reduce((sum, width) => sum + width, 0) + GAP * (fitted.length - 1);
  while (total() > maxWidth) {
    const widest = fitted.indexOf(Math.max(...fitted));
    if (fitted[widest]! <= MIN_COLUMN) break; // as narrow as it gets: the terminal wraps the rest
    fitted[widest] = Math.max(MIN_COLUMN, fitted[widest]! - Math.max(1, total() - maxWidth));
  }
  return fitted;
};

/** The cell cut to `width` columns with a trailing `…` when it is longer. Cells are escaped already. */
const cut = (cell: string, width: number): string => {
  const chars = [...cell];
  return chars.length <= width ? cell : `${chars.slice(0, width - 1).join('')}…`;
};

/**
 * A plain-text table for people: padded columns under a header row. Every cell is escaped for
 * the terminal first, and the widths are those of the escaped text, so a hostile cell can
 * neither break out of its row nor shift the columns. With `maxWidth` (the terminal's width), the
 * widest columns are cut with `…` until the table fits; piped output passes none and stays whole.
 */
export const formatTable = (
  header: readonly string[],
  rows: readonly (readonly string[])[],
  maxWidth?: number,
): TerminalText => {
  const cells = [header, ...rows].map((row) => row.map((cell) => escapeForTerminal(cell)));
  const natural = header.map((_, column) => Math.max(...cells.map((row) => displayWidth(row[column] ?? ''))));
  const widths = fitWidths(natural, maxWidth);
  return TerminalText.trusted(
    cells
      .map((row) =>
        row
          .map((cell, column) => {
            const width = widths[column] ?? 0;
            const shown = cut(cell, width);
            return shown + ' '.repeat(width - displayWidth(shown));
          })
          .join(' '.repeat(GAP))
          .trimEnd(),
      )
      .join('\n'),
  );
};
