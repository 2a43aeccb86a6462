/**
 * Wall times typed in the reader's time zone: a `datetime-local` field has no zone, so
 * assets/console.js sends the reader's (`zone`, an IANA name) beside it and the console reads the
 * time there. Without the script nothing is sent and the field is read as UTC, as its label says.
 */
import { Refusal } from './refusals';

const PARTS = ['year', 'month', 'day', 'hour', 'minute', 'second'] as const;

/** How far `zone`'s wall clock is ahead of UTC at `instant`, in ms. */
const offsetAt = (format: Intl.DateTimeFormat, instant: number): number => {
  const parts = Object.fromEntries(format.formatToParts(instant).map((p) => [p.type, Number(p.value)]));
  const [year, month, day, hour, minute, second] = PARTS.map((name) => parts[name] ?? 0);
  return Date.UTC(year!, month! - 1, day!, hour!, minute!, second!) - Math.floor(instant / 1000) * 1000;
};

const zoneFormat = (zone: string): Intl.DateTimeFormat => {
  try {
    return new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      ...Object.fromEntries(PARTS.map((name) => [name, 'numeric'])),
    });
  } catch {
    throw new Refusal(400, 'Bad request', `No time zone "${zone}".`);
  }
};

/**
 * `YYYY-MM-DDTHH:MM` typed in `zone` as the same form of UTC wall time. Anything else is
 * returned as it came, for the operator library to refuse with its own message.
 */
export const wallTimeToUtc = (wall: string, zone: string | null | undefined): string => {
  if (!zone || !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/.test(wall)) return wall;
  const format = zoneFormat(zone);
  const asUtc = Date.parse(`${wall}:00Z`);
  if (Number.isNaN(asUtc)) return wall;
  // Twice: the offset at the first guess can differ from the offset at the answer across a DST change.
  const first = asUtc - offsetAt(format, asUtc);
  const instant = asUtc - offsetAt(format, first);
  return new Date(instant).toISOString().slice(0, 16);
};
