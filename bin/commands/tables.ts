/**
 * The CLI's tables of calls and key actions (`usage`, `keys activity`), apart from the commands so
 * they can be checked at any width without parsing a command line.
 */
import { callRoute, formatTable } from '../../lib/operator/format';
import type { TerminalText } from '../../lib/operator/terminal';
import type { ActivityEntry } from '../../shared/domain/key-activity';
import type { UsageRecord } from '../../shared/domain/usage-record';

/** An ISO time as the CLI's tables show it, in UTC to the second: `2026-11-28 05:00:21`. */
export const utcTime = (iso: string): string => `${iso.slice(0, 10)} ${iso.slice(11, 19)}`;

const shown = (value: unknown): string =>
  value === null || value === undefined ? '-' : Array.isArray(value) ? value.join(',') : String(value);

/** `name: sync → billing; rate_limit: - → 5/s` */
export const describeChanges = (entry: ActivityEntry): string =>
  Object.entries(entry.changes)
    .map(([field, { before, after }]) => `${field}: ${shown(before)} → ${shown(after)}`)
    .join('; ') || '-';

/**
 * The activity log as a table: the time to the second and the action kept whole while anything
 * else can give way; with one key (`--key`) no key column, every row being that key's.
 */
export const activityTable = (
  entries: readonly ActivityEntry[],
  { oneKey, width }: { oneKey: boolean; width: number | undefined },
): TerminalText =>
  formatTable(
    ['TIME (UTC)', 'ACTION', ...(oneKey ? [] : ['KEY']), 'NAME', 'ACTOR', 'CHANGES'],
    entries.map((e) => [
      utcTime(e.at),
      e.action,
      ...(oneKey ? [] : [e.key_id]),
      e.key_name,
      e.actor,
      describeChanges(e),
    ]),
    width,
    [],
    ['TIME (UTC)', 'ACTION'],
  );

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
    ['TIME (UTC)', ...(oneKey ? [] : ['KEY']), 'CALL', 'STATUS', 'MS', 'REQUEST ID'],
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
    ['TIME (UTC)', 'CALL', 'STATUS', 'MS'],
  );
