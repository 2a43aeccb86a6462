/**
 * The one Markdown table writer (docs, bench results, load reports): cells padded as Prettier pads
 * them, so a generated table stays stable under `prettier --check`, and `|` escaped.
 */
export const markdownTable = (rows: readonly (readonly string[])[]): string[] => {
  const cells = rows.map((row) => row.map((cell) => cell.replaceAll('|', '\\|')));
  const widths = cells[0]!.map((_cell, i) => Math.max(3, ...cells.map((row) => row[i]!.length)));
  const line = (row: readonly string[]) => `| ${row.map((cell, i) => cell.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(cells[0]!), line(widths.map((width) => '-'.repeat(width))), ...cells.slice(1).map(line)];
};
