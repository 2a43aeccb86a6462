/**
 * The CLI's tables of calls and key actions (`usage`, `keys activity`), apart from the commands so
 * they can be checked at any width without parsing a command line.
 */
import { callRoute, cut, formatTable, shortActor } from '../../lib/operator/format';
import { escapeForTerminal, TerminalText } from '../../lib/operator/terminal';
import type { ActivityEntry } from '../../shared/domain/key-activity';
import type { UsageRecord } from '../../shared/domain/usage-record';

/** An ISO time as the CLI's tables show it, in UTC to the second: `2026-11-28 05:00:21`. */
export const utcTime = (iso: string): string => `${iso.slice(0, 10)} ${iso.slice(11, 19)}`;

const shown = (value: unknown): string =>
  value === null || value === undefined ? '-' : Array.isArray(value) ? value.join(',') : String(value);

/** Each change once, `name: sync → billing`, then the details no change repeats (a leak report's url). */
export const describeChanges = (entry: ActivityEntry): string[] => [
  ...Object.entries(entry.changes).map(([field, { before, after }]) => `${field}: ${shown(before)} → ${shown(after)}`),
  ...Object.entries(entry.details ?? {})
    .filter(([name]) => !Object.hasOwn(entry.changes, name))
    .map(([name, value]) => `${name}: ${value}`),
];

/**
 * The activity log: a row per action (the time to the second and the action kept whole, who
 * shortened at a terminal's width: an IAM ARN's role and session), each change on its own
 * indented line below it, cut to the width only past its end; with one key (`--key`) no key column.
 */
export const activityTable = (
  entries: readonly ActivityEntry[],
  { oneKey, width }: { oneKey: boolean; width: number | undefined },
): TerminalText => {
  const [header, ...rows] = formatTable(
    ['TIME (UTC)', 'ACTION', ...(oneKey ? [] : ['KEY']), 'NAME', 'WHO'],
    entries.map((e) => [
      utcTime(e.at),
      e.action,
      ...(oneKey ? [] : [e.key_id]),
      e.key_name,
      width === undefined ? e.actor : shortActor(e.actor),
    ]),
    width,
    [],
    ['TIME (UTC)', 'ACTION'],
  ).text.split('\n');
  const changes = (entry: ActivityEntry | undefined) =>
    (entry ? describeChanges(entry) : []).map((change) => cut(`  ${escapeForTerminal(change)}`, width ?? Infinity));
  return TerminalText.trusted([header, ...rows.flatMap((row, i) => [row, ...changes(entries[i])])].join('\n'));
};

/**
 * The usage log as a table: the time to the second and the call kept whole while anything else
 * can give way; with one key (`--key`) no key column, every row being that key's; the request id
 * left out first when the width is short.
 */
export const usageTable = (
  records: readonly UsageRecord[],
  { oneKey, width }: { oneKey: boolean; width: number | undefined },
): TerminalText =>
  formatTable(
    ['TIME (UTC)', ...(oneKey ? [] : ['KEY']), 'ROUTE', 'STATUS', 'MS', 'REQUEST ID'],
    records.map((r) => [
      utcTime(r.timestamp),
      ...(oneKey ? [] : [r.key_id]),
      callRoute(r),
      String(r.status),
      String(r.response_time_ms),
      r.request_id,
    ]),
    width,
    ['REQUEST ID'],
    ['TIME (UTC)', 'ROUTE', 'STATUS', 'MS'],
  );
