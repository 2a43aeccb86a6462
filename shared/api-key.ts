/**
 * Branch API key format.
 *
 *   wsk_<43 base62 chars: 256 bits of CSPRNG randomness><6 base62 chars: CRC32 of the random part>
 *
 * 53 characters in all. The checksum lets a typo or a truncated key be refused without a
 * database read, and lets secret scanners recognise the format (as GitHub tokens do). The
 * key is stored only as the SHA-256 of the whole value; the plaintext is shown once.
 */
import { createHash, randomBytes } from 'node:crypto';
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

const checksumOf = (randomPart: string): string => toBase62(BigInt(crc32(randomPart)), CHECKSUM_CHARS);

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
export const hashApiKey = (value: string): string => createHash('sha256').update(value).digest('hex');

/** A key, or most of one, inside other text: the prefix and 20 or more base62 characters (≥ 119 bits). */
const KEY_IN_TEXT = new RegExp(`${API_KEY_PREFIX}[0-9A-Za-z]{20,}`, 'g');

/**
 * Text with every key-shaped run replaced, for what is logged or stored about a request: a caller
 * who pastes a key into a URL must not find it in the usage log.
 */
export const redactApiKeys = (text: string): string => text.replace(KEY_IN_TEXT, `${API_KEY_PREFIX}[REDACTED]`);

/** The first characters of a key, stored and shown so an operator can tell keys apart. */
export const apiKeyStart = (value: string): string => value.slice(0, START_CHARS);
