import type { UsageRecord } from '../../shared/domain/usage-record';
import { displayWidth, escapeForTerminal, TerminalText } from './terminal';

/** Narrowest a column is cut to when a table must fit the terminal. */
const MIN_COLUMN = 6;
const GAP = 2;

const tableWidth = (widths: readonly number[]): number =>
  widths.reduce((sum, width) => sum + width, 0) + GAP * (widths.length - 1);

/**
 * Column widths that fit `maxWidth` (when they can), taking from the widest column each time: the
 * columns not marked `cutLast` first, down to MIN_COLUMN, then the others.
 */
const fitWidths = (widths: number[], maxWidth: number | undefined, cutLast: readonly boolean[]): number[] => {
  if (maxWidth === undefined) return widths;
  const fitted = [...widths];
  const total = () => tableWidth(fitted);
  for (const tier of [false, true]) {
    while (total() > maxWidth) {
      const cuttable = fitted.map((width, column) => (cutLast[column] === tier ? width : 0));
      const widest = cuttable.indexOf(Math.max(...cuttable));
      if (cuttable[widest]! <= MIN_COLUMN) break; // as narrow as this tier gets
      fitted[widest] = Math.max(MIN_COLUMN, fitted[widest]! - Math.max(1, total() - maxWidth));
    }
  }
  return fitted; // still too wide: the terminal wraps the rest
};

/** The cell cut to `width` columns with a trailing `…` when it is longer. Cells are escaped already. */
export const cut = (cell: string, width: number): string => {
  const chars = [...cell];
  return chars.length <= width ? cell : `${chars.slice(0, width - 1).join('')}…`;
};

/**
 * The columns to show within `maxWidth`: all of them when they fit whole, else without the
 * `droppable` ones (given least important first), one at a time, until the rest fit whole or none
 * is left to drop; the columns kept keep more of their text that way than all cut to a stub.
 */
const columnsToShow = (
  header: readonly string[],
  natural: readonly number[],
  maxWidth: number | undefined,
  droppable: readonly string[],
): number[] => {
  const shown = header.map((_, column) => column);
  for (const name of droppable) {
    if (maxWidth === undefined || tableWidth(shown.map((column) => natural[column]!)) <= maxWidth) break;
    const column = header.indexOf(name);
    if (column !== -1 && shown.length > 1) shown.splice(shown.indexOf(column), 1);
  }
  return shown;
};

/**
 * A plain-text table for people: padded columns under a header row. Every cell is escaped for
 * the terminal first, and the widths are those of the escaped text, so a hostile cell can
 * neither break out of its row nor shift the columns. With `maxWidth` (the terminal's width), the
 * `droppable` columns are left out (least important first, with a note) while the table does not
 * fit, then the widest columns are cut with `…` until it does, those named `cutLast` (the ones
 * a reader needs whole) only when the others are as narrow as they go; piped output passes no
 * width and stays whole.
 */
export const formatTable = (
  header: readonly string[],
  rows: readonly (readonly string[])[],
  maxWidth?: number,
  droppable: readonly string[] = [],
  cutLast: readonly string[] = [],
): TerminalText => {
  const all = [header, ...rows].map((row) => row.map((cell) => escapeForTerminal(cell)));
  const natural = header.map((_, column) => Math.max(...all.map((row) => displayWidth(row[column] ?? ''))));
  const shown = columnsToShow(header, natural, maxWidth, droppable);
  const cells = all.map((row) => shown.map((column) => row[column] ?? ''));
  const widths = fitWidths(
    shown.map((column) => natural[column]!),
    maxWidth,
    shown.map((column) => cutLast.includes(header[column]!)),
  );
  const hidden = header.filter((_, column) => !shown.includes(column)).map(escapeForTerminal);
  const table = cells
    .map((row) =>
      row
        .map((cell, column) => {
          const width = widths[column] ?? 0;
          const cutCell = cut(cell, width);
          return cutCell + ' '.repeat(width - displayWidth(cutCell));
        })
        .join(' '.repeat(GAP))
        .trimEnd(),
    )
    .join('\n');
  return TerminalText.trusted(
    hidden.length
      ? `${table}\n${cut(`(not shown at this width: ${hidden.join(', ')}; --json has all)`, maxWidth ?? Infinity)}`
      : table,
  );
};

/**
 * The keys a key was rolled from and to, in that order (`from key_a`, `to key_b`): the CLI's key
 * list writes them as text, the console's keys page with each id as code.
 */
export const rollLinks = (key: Partial<Record<'rolled_from' | 'rolled_to', string>>) =>
  (['from', 'to'] as const).flatMap((direction) => {
    const keyId = key[`rolled_${direction}`];
    return keyId ? [[direction, keyId] as const] : [];
  });

/**
 * A call as every view spells it (CLI, console, CSV's `route`): its route, `GET /v1/branch`, as
 * the spec and docs/openapi.json write it; a call no route matched (`$default`), its method and
 * raw path. The raw path itself is shown only where the raw path is meant (a call's details).
 */
export const callRoute = (call: Pick<UsageRecord, 'method' | 'path' | 'route'>): string =>
  call.route === '$default' ? `${call.method} ${call.path}` : call.route;

/**
 * Durations and percentiles, one rule (docs/decisions.md "Percentiles"): a call's duration is its
 * measured milliseconds (`34.67 ms`); a percentile is the upper bound of the histogram bucket that
 * holds it (shared/domain/rollups.ts), written `≤50 ms`; none: `–`.
 */
export const durationText = (ms: number): string => `${ms} ms`;
export const percentileText = (ms: number | null): string => (ms === null ? '–' : `≤${ms} ms`);

/**
 * Who acted, short: an IAM principal's ARN as its role and session or user name
 * (`BranchOperators/jane`), anything else as it is. Views keep the whole text at hand.
 */
export const shortActor = (actor: string): string =>
  /^arn:aws[\w-]*:(?:iam|sts)::\d*:(?:assumed-role|user|role)\/(.+)$/.exec(actor)?.[1] ?? actor;
