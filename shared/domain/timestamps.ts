/**
 * ISO 8601 timestamps (`YYYY-MM-DDTHH:MM:SS.mmmZ`) at the rate requests arrive. Date's own
 * formatting and parsing cost about 1 µs and 0.6 µs in a request (docs/performance.md "Where the
 * µs go"), and every request both writes one (its usage record's time) and reads it back (the
 * record's expiry). Calls of one second share that second's text and value; the output is exactly
 * Date's (test/timestamps.test.ts).
 */

/** Epoch milliseconds of 10000-01-01: from there on toISOString writes a six-digit, signed year. */
const YEAR_10000_MS = 253_402_300_800_000;

let formattedSecond = Number.NaN;
/** `YYYY-MM-DDTHH:MM:SS.` of formattedSecond. */
let formattedText = '';

/** `new Date(epochMs).toISOString()`, without a Date for most calls. */
export const isoTimestamp = (epochMs: number): string => {
  if (!(epochMs >= 0 && epochMs < YEAR_10000_MS)) return new Date(epochMs).toISOString();
  const ms = Math.floor(epochMs);
  const second = Math.floor(ms / 1000);
  if (second !== formattedSecond) {
    formattedText = new Date(second * 1000).toISOString().slice(0, 20);
    formattedSecond = second;
  }
  const milliseconds = ms - second * 1000;
  return `${formattedText}${milliseconds < 10 ? '00' : milliseconds < 100 ? '0' : ''}${milliseconds}Z`;
};

/** `YYYY-MM-DDTHH:MM:SS` of parsedSeconds; empty until a first parse. */
let parsedText = '';
let parsedSeconds = Number.NaN;

const isDigitAt = (text: string, at: number): boolean => {
  const code = text.charCodeAt(at);
  return code >= 48 && code <= 57;
};

/** The canonical form, whose second is its first 19 characters: `....-..-..T..:..:..` + `.mmmZ`. */
const isCanonical = (timestamp: string): boolean =>
  timestamp.length === 24 &&
  timestamp[19] === '.' &&
  timestamp[23] === 'Z' &&
  isDigitAt(timestamp, 20) &&
  isDigitAt(timestamp, 21) &&
  isDigitAt(timestamp, 22);

/** `Math.floor(Date.parse(timestamp) / 1000)`: NaN for text that is no time. */
export const epochSecondsOf = (timestamp: string): number => {
  if (!isCanonical(timestamp)) return Math.floor(Date.parse(timestamp) / 1000);
  if (parsedText === '' || !timestamp.startsWith(parsedText)) {
    parsedSeconds = Math.floor(Date.parse(timestamp) / 1000);
    parsedText = timestamp.slice(0, 19);
  }
  return parsedSeconds;
};
