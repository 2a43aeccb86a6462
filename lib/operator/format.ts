import { displayWidth, escapeForTerminal, TerminalText } from './terminal';

/**
 * A plain-text table for people: padded columns under a header row. Every cell is escaped for
 * the terminal first, and the widths are those of the escaped text, so a hostile cell can
 * neither break out of its row nor shift the columns.
 */
export const formatTable = (header: readonly string[], rows: readonly (readonly string[])[]): TerminalText => {
  const cells = [header, ...rows].map((row) => row.map((cell) => escapeForTerminal(cell)));
  const widths = header.map((_, column) => Math.max(...cells.map((row) => displayWidth(row[column] ?? ''))));
  return TerminalText.trusted(
    cells
      .map((row) =>
        row
          .map((cell, column) => cell + ' '.repeat((widths[column] ?? 0) - displayWidth(cell)))
          .join('  ')
          .trimEnd(),
      )
      .join('\n'),
  );
};
