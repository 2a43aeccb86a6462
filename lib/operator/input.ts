/**
 * Typed text to typed values, for the CLI and the console (the operator library itself takes
 * typed values): dates, scopes, IP allowlists, rate limits and grace periods. Errors name the data
 * field; each caller names it its own way (lib/operator/errors.ts `messageNaming`). See
 * docs/decisions.md, "Operator input".
 */
import { InvalidCidrError, parseAllowlist } from '../../shared/domain/cidr';
import { InvalidRateLimitError, parseRateLimit } from '../../shared/domain/rate-limit';
import { SCOPES, ScopeSchema, type Scope } from '../../shared/domain/schemas';
import { invalidInput, namingField, OperatorError, type OperatorField } from './errors';
import { DURATION_UNITS, MAX_GRACE_MS } from './limits';

const ISO_8601 =
  /^(?<year>\d{4})-(?<month>\d{2})-(?<day>\d{2})(?:T(?<hour>\d{2}):(?<minute>\d{2})(?::(?<second>\d{2})(?:\.(?<fraction>\d{1,9}))?)?(?<offset>Z|(?<sign>[+-])(?<offsetHours>\d{2}):?(?<offsetMinutes>\d{2}))?)?$/;

/** Days in the month, whatever the year (setUTCFullYear, unlike Date.UTC, keeps years 0-99). */
const daysInMonth = (year: number, month: number): number => {
  const date = new Date(0);
  date.setUTCFullYear(year, month, 0);
  return date.getUTCDate();
};

const monthName = (month: number): string =>
  new Intl.DateTimeFormat('en', { month: 'long', timeZone: 'UTC' }).format(Date.UTC(2000, month - 1));

/** Why the fields of a well-formed value name no real instant, or undefined when they do. */
const impossibility = (fields: Record<string, string | undefined>): string | undefined => {
  const number = (name: string) => Number(fields[name] ?? 0);
  const [year, month, day] = [number('year'), number('month'), number('day')];
  if (month < 1 || month > 12) return `there is no month ${month}`;
  if (day < 1 || day > daysInMonth(year, month)) {
    return `${monthName(month)} ${year} has ${daysInMonth(year, month)} days`;
  }
  if (number('hour') > 23) return 'the hour must be 00-23';
  if (number('minute') > 59) return 'the minute must be 00-59';
  if (number('second') > 59) return 'the second must be 00-59; leap seconds are not accepted';
  if (number('offsetHours') > 23 || number('offsetMinutes') > 59) return 'the UTC offset must be at most 23:59';
  return undefined;
};

/**
 * Parses an ISO 8601 date (midnight UTC) or date-time (UTC unless it names an offset, `Z` or
 * `±hh:mm`), refusing any calendar day, hour, minute, second or offset that does not exist:
 * JavaScript's Date would roll 2027-02-30 over to March 2.
 * @throws OperatorError with a one-line message about `field`
 */
export const parseIsoDate = (value: string, field: OperatorField): Date => {
  const fields = ISO_8601.exec(value)?.groups;
  const problem = fields ? impossibility(fields) : undefined;
  if (!fields || problem) {
    throw invalidInput(
      field,
      ` must be an ISO 8601 date or date-time, e.g. 2027-01-31T23:59:59Z; got "${value}"${problem ? ` (${problem})` : ''}`,
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

/** A comma-separated scope list; an empty entry (`read,,`, `,read`) is a typo, not ignored. */
export const parseScopes = (value: string): Scope[] => {
  if (!value.trim()) return [];
  const scopes = value.split(',').map((scope) => scope.trim());
  if (scopes.includes('')) {
    throw invalidInput(
      'scopes',
      ` has an empty entry in "${value}"; separate scopes with single commas, e.g. read,team:read`,
    );
  }
  return scopeList(scopes);
};

/** Scope names (a form's checkboxes) → scopes, without repeats; an unknown name is refused. */
export const scopeList = (names: readonly string[]): Scope[] => {
  const unknown = names.filter((scope) => !ScopeSchema.safeParse(scope).success);
  if (unknown.length > 0) {
    throw new OperatorError(
      `Unknown scope ${unknown.map((s) => `"${s}"`).join(', ')}; allowed: ${SCOPES.join(', ')}`,
      'invalid_input',
      'scopes',
    );
  }
  return [...new Set(names as Scope[])];
};

/** `203.0.113.0/24, 2001:db8::1` → canonical CIDR entries; an empty entry (`a,,b`) is refused as a typo. */
export const parseAllowedIps = namingField('allowed_ips', parseAllowlist, InvalidCidrError);

/** `N/s`, `N/min` or `N/h`. */
export const parseRateLimitText = namingField('rate_limit', parseRateLimit, InvalidRateLimitError);

export { DEFAULT_GRACE } from './limits';

/** `30s`, `15m`, `24h`, `7d` → milliseconds; `0` ends the old key at once. */
export const parseGrace = (value: string): number => {
  const match = /^(?:0|([1-9][0-9]{0,5})([smhd]))$/.exec(value.trim());
  const ms = match ? (match[1] ? Number(match[1]) * DURATION_UNITS[match[2] as keyof typeof DURATION_UNITS] : 0) : NaN;
  if (Number.isNaN(ms) || ms > MAX_GRACE_MS) {
    throw invalidInput(
      'grace',
      ` must be 0 or a duration such as 30s, 15m, 24h or 7d (at most ${MAX_GRACE_MS / DURATION_UNITS.d}d); got "${value}"`,
    );
  }
  return ms;
};
