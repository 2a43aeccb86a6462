/**
 * Branch API key format.
 *
 *   wsk_<43 base62 chars: 256 bits of CSPRNG randomness><6 base62 chars: CRC32 of the random part>
 *
 * 53 characters in all. The checksum lets a typo or a truncated key be refused without a
 * database read, and lets secret scanners recognise the format (as GitHub tokens do). The
 * key is stored only as the SHA-256 of the whole value; the plaintext is shown once.
 */
import { hash, randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';

export const API_KEY_PREFIX = 'wsk_';
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const RANDOM_BYTES = 32;
const RANDOM_CHARS = 43; // ceil(256 / log2(62))
const CHECKSUM_CHARS = 6; // ceil(32 / log2(62))
export const API_KEY_LENGTH = API_KEY_PREFIX.length + RANDOM_CHARS + CHECKSUM_CHARS;
/** Characters of a key kept for display ("start"): the prefix and 4 random characters. */
const START_CHARS = API_KEY_PREFIX.length + 4;
const KEY_PATTERN = new RegExp(`^${API_KEY_PREFIX}[0-9A-Za-z]{${RANDOM_CHARS + CHECKSUM_CHARS}}$`);

const toBase62 = (value: bigint, width: number): string => {
  let out = '';
  let rest = value;
  while (rest > 0n) {
    out = BASE62[Number(rest % 62n)] + out;
    rest /= 62n;
  }
  return out.padStart(width, '0');
};

/** CRC32 in base62, 6 digits. In Number arithmetic: a CRC32 fits, and it runs on every request. */
const checksumOf = (randomPart: string): string => {
  let out = '';
  let rest = crc32(randomPart);
  for (let i = 0; i < CHECKSUM_CHARS; i += 1) {
    out = BASE62[rest % 62] + out;
    rest = Math.floor(rest / 62);
  }
  return out;
};

/** Creates a new key value. The caller shows it once and stores only {@link hashApiKey} of it. */
export const generateApiKey = (): string => {
  const random = toBase62(BigInt(`0x${randomBytes(RANDOM_BYTES).toString('hex')}`), RANDOM_CHARS);
  return `${API_KEY_PREFIX}${random}${checksumOf(random)}`;
};

/** Format and checksum check, with no I/O: true only for a value that could be a real key. */
export const isWellFormedApiKey = (value: string): boolean => {
  if (value.length !== API_KEY_LENGTH || !KEY_PATTERN.test(value)) return false;
  const random = value.slice(API_KEY_PREFIX.length, API_KEY_PREFIX.length + RANDOM_CHARS);
  return value.endsWith(checksumOf(random));
};

/** The lookup key of a key record: hex SHA-256 of the whole key value. */
export const hashApiKey = (value: string): string => hash('sha256', value, 'hex');

/** A key, or most of one, inside other text: the prefix and 20 or more base62 characters (≥ 119 bits). */
const KEY_IN_TEXT = new RegExp(`${API_KEY_PREFIX}[0-9A-Za-z]{20,}`, 'g');
const REDACTED = `${API_KEY_PREFIX}[REDACTED]`;
/** Rounds of percent-decoding searched for a key: a key pasted once, twice or three times encoded. */
const DECODING_ROUNDS = 3;

/** One UTF-16 unit of a (partly) decoded text, and the range of the original text it stands for. */
interface Unit {
  char: string;
  start: number;
  end: number;
}

const isHex = (unit: Unit | undefined): boolean => unit !== undefined && /^[0-9A-Fa-f]$/.test(unit.char);
const isEscapeAt = (units: Unit[], at: number): boolean =>
  units[at]?.char === '%' && isHex(units[at + 1]) && isHex(units[at + 2]);

/** Bytes of the UTF-8 character a lead byte starts; 0 when it starts none. */
const utf8Length = (lead: number): number => {
  if (lead < 0x80) return 1;
  if (lead >= 0xc2 && lead <= 0xdf) return 2;
  if (lead >= 0xe0 && lead <= 0xef) return 3;
  if (lead >= 0xf0 && lead <= 0xf4) return 4;
  return 0;
};

/** The character the escapes at `at` encode and how many units they take, if they form one. */
const decodeCharAt = (units: Unit[], at: number): { text: string; length: number } | undefined => {
  if (!isEscapeAt(units, at)) return undefined;
  const length = 3 * utf8Length(parseInt(units[at + 1]!.char + units[at + 2]!.char, 16));
  if (length === 0) return undefined;
  for (let next = at + 3; next < at + length; next += 3) if (!isEscapeAt(units, next)) return undefined;
  try {
    // Also refuses bad continuation bytes, overlong forms and surrogates.
    const escapes = units.slice(at, at + length).map((unit) => unit.char);
    return { text: decodeURIComponent(escapes.join('')), length };
  } catch {
    return undefined;
  }
};

/**
 * One round of percent-decoding, piece by piece: each run of escapes that forms one UTF-8
 * character becomes it; an escape that does not (`%E0%A4%A`, `%C3` alone) stays as it is, as does
 * anything that is no escape (`%zz`, a lone `%`). decodeURIComponent instead refuses the whole text.
 */
const decodeRound = (units: Unit[]): Unit[] => {
  const out: Unit[] = [];
  for (let at = 0; at < units.length;) {
    const decoded = decodeCharAt(units, at);
    if (!decoded) {
      out.push(units[at]!);
      at += 1;
      continue;
    }
    const span = { start: units[at]!.start, end: units[at + decoded.length - 1]!.end };
    // UTF-16 units, as the text is indexed: a character beyond U+FFFF is two.
    for (const char of decoded.text.split('')) out.push({ char, ...span });
    at += decoded.length;
  }
  return out;
};

/**
 * Text with every key-shaped run replaced, for what is logged or stored about a request: a caller
 * who pastes a key into a URL must not find it in the usage log. A run is found in the text as it
 * is and in its percent-decoded forms, so encoding some characters of a key, next to an escape
 * that does not decode, hides nothing; the text is otherwise kept as it was (docs/decisions.md,
 * "API keys").
 */
export const redactApiKeys = (text: string): string => {
  if (!text.includes('%')) return text.includes(API_KEY_PREFIX) ? text.replace(KEY_IN_TEXT, REDACTED) : text;
  const spans: [number, number][] = [];
  let units: Unit[] = Array.from({ length: text.length }, (_, at) => ({ char: text[at]!, start: at, end: at + 1 }));
  for (let round = 0; ; round += 1) {
    const decodedText = units.map((unit) => unit.char).join('');
    for (const match of decodedText.matchAll(KEY_IN_TEXT)) {
      spans.push([units[match.index]!.start, units[match.index + match[0].length - 1]!.end]);
    }
    if (round === DECODING_ROUNDS) break;
    const decoded = decodeRound(units);
    if (decoded.length === units.length) break; // nothing left to decode
    units = decoded;
  }
  if (spans.length === 0) return text;
  spans.sort(([a], [b]) => a - b);
  let out = '';
  let at = 0;
  for (const [start, end] of spans) {
    if (start >= at) out += text.slice(at, start) + REDACTED;
    at = Math.max(at, end);
  }
  return out + text.slice(at);
};

/** The first characters of a key, stored and shown so an operator can tell keys apart. */
export const apiKeyStart = (value: string): string => value.slice(0, START_CHARS);
