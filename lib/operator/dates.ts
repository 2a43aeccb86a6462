/**
 * The one date parser of the operator tooling (`--expires`, `--since`): strict ISO 8601, so an
 * impossible date is refused instead of rolled over (JavaScript's Date turns 2027-02-30 into
 * March 2, with or without an offset). See docs/decisions.md, "Operator input".
 */
import { fieldOfOption, invalidInput } from './errors';

const ISO_8601 =
  /^(?<year>\d{4})-(?<month>\d{2})-(?<day>\d{2})(?:T(?<hour>\d{2}):(?<minute>\d{2})(?::(?<second>\d{2})(?:\.(?<fraction>\d{1,9}))?)?(?<offset>Z|(?<sign>[+-])(?<offsetHours>\d{2}):?(?<offsetMinutes>\d{2}))?)?$/;

const isLeapYear = (year: number) => (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;

const daysInMonth = (year: number, month: number): number =>
  month === 2 ? (isLeapYear(year) ? 29 : 28) : [4, 6, 9, 11].includes(month) ? 30 : 31;

const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];

/** Why the fields of a well-formed value name no real instant, or undefined when they do. */
const impossibility = (fields: Record<string, string | undefined>): string | undefined => {
  const number = (name: string) => Number(fields[name] ?? 0);
  const [year, month, day] = [number('year'), number('month'), number('day')];
  if (month < 1 || month > 12) return `there is no month ${month}`;
  if (day < 1 || day > daysInMonth(year, month)) {
    return `${MONTHS[month - 1]} ${year} has ${daysInMonth(year, month)} days`;
  }
  if (number('hour') > 23) return 'the hour must be 00-23';
  if (number('minute') > 59) return 'the minute must be 00-59';
  if (number('second') > 59) return 'the second must be 00-59; leap seconds are not accepted';
  if (number('offsetHours') > 23 || number('offsetMinutes') > 59) return 'the UTC offset must be at most 23:59';
  return undefined;
};

/**
 * Parses an ISO 8601 date (midnight UTC) or date-time (UTC unless it names an offset, `Z` or
 * `±hh:mm`), refusing any calendar day, hour, minute, second or offset that does not exist.
 * @param what the option's name, for the message
 * @throws OperatorError with a one-line message
 */
export const parseIsoDate = (value: string, what: string): Date => {
  const fields = ISO_8601.exec(value)?.groups;
  const problem = fields ? impossibility(fields) : undefined;
  if (!fields || problem) {
    throw invalidInput(
      fieldOfOption(what),
      `${what} must be an ISO 8601 date or date-time, e.g. 2027-01-31T23:59:59Z; got "${value}"${problem ? ` (${problem})` : ''}`,
    );
  }
  const number = (name: string) => Number(fields[name] ?? 0);
  const millis = Number((fields.fraction ?? '').padEnd(3, '0').slice(0, 3));
  const offsetMinutes = (fields.sign === '-' ? -1 : 1) * (number('offsetHours') * 60 + number('offsetMinutes'));
  const date = new Date(0);
  // setUTCFullYear, unlike Date.UTC, does not read years 0-99 as 1900-1999.
  date.setUTCFullYear(number('year'), number('month') - 1, number('day'));
  date.setUTCHours(number('hour'), number('minute') - offsetMinutes, number('second'), millis);
  return date;
};
