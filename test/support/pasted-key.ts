/**
 * Paths with a real key pasted into them, some of its characters percent-encoded, with junk
 * around it that does not decode (`%E0%A4%A`, `%`, `%zz`), and the check that a text shows no part
 * of the key: no 20-character run of it, in the text as it is or percent-decoded.
 */
import fc from 'fast-check';
import { generateApiKey } from '../../shared/domain/api-key';

/** One character as sent: itself, or its UTF-8 percent-encoding in lower or upper case hex. */
const encodeChar = (char: string, how: 'raw' | 'lower' | 'upper'): string => {
  if (how === 'raw') return char;
  const escaped = [...Buffer.from(char, 'utf8')].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join('');
  return how === 'upper' ? escaped.toUpperCase() : escaped;
};

const junkPiece = fc.oneof(
  fc.constantFrom(
    '%E0%A4%A',
    '%',
    '%zz',
    '%2',
    '%25',
    '%4e',
    '%C3',
    '%E0%A4',
    '%F0%9F%98',
    '%F0%9F%98%80',
    '%00',
    '-',
    '.',
    'é',
    '😀',
  ),
  fc.string({ maxLength: 6 }).map((text) => text.replace(/[/?#]/g, '')),
  fc.string({ maxLength: 6 }).map(encodeURIComponent),
);
const junk = fc.array(junkPiece, { maxLength: 4 }).map((pieces) => pieces.join(''));

export interface PastedKey {
  key: string;
  /** One path segment: junk, the key with any subset of its characters encoded, junk. */
  segment: string;
}

/** A fresh real key (generateApiKey) pasted into a path segment. */
export const pastedKey: fc.Arbitrary<PastedKey> = fc
  .tuple(
    fc.constant(null).map(() => generateApiKey()),
    fc.array(fc.constantFrom('raw', 'lower', 'upper') as fc.Arbitrary<'raw' | 'lower' | 'upper'>, {
      minLength: 53,
      maxLength: 53,
    }),
    junk,
    junk,
  )
  .map(([key, encodings, before, after]) => ({
    key,
    segment: before + [...key].map((char, at) => encodeChar(char, encodings[at] ?? 'raw')).join('') + after,
  }));

/**
 * Decodes every run of percent-escapes as UTF-8 (bytes that are not UTF-8 become U+FFFD), once
 * per round, for `rounds` rounds: every form a reader could decode the text to.
 */
const decodedForms = (text: string, rounds = 4): string[] => {
  const forms = [text];
  let current = text;
  for (let round = 0; round < rounds; round += 1) {
    current = current.replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) =>
      new TextDecoder().decode(Buffer.from(run.replaceAll('%', ''), 'hex')),
    );
    forms.push(current);
  }
  try {
    forms.push(decodeURIComponent(text));
  } catch {
    // Not decodable as a whole: the piecewise forms above cover it.
  }
  return forms;
};

/** The 20-character runs of `key` found in `text` or any decoded form of it (none is the goal). */
export const keyRunsIn = (text: string, key: string): string[] => {
  const forms = decodedForms(text);
  const found = new Set<string>();
  for (let at = 0; at + 20 <= key.length; at += 1) {
    const run = key.slice(at, at + 20);
    if (forms.some((form) => form.includes(run))) found.add(run);
  }
  return [...found];
};
