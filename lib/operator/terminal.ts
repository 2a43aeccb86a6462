/**
 * Text for a person's terminal. Paths, names and ids come from callers and key holders: written
 * raw, an ESC or OSC sequence could forge or hide rows, move the cursor or set the clipboard
 * (OSC 52), and a bidi override could reorder what is read. See docs/decisions.md, "Operator
 * output".
 */

/** DEL, C1 controls, bidi marks, embeddings, overrides and isolates, U+2028/U+2029. */
const BEYOND_C0 = '\\u007f-\\u009f\\u061c\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069';
/**
 * Characters escaped for display: C0 controls and the set above, and the backslash itself (so
 * an escape can never be mistaken for text that merely looks like one).
 */
const UNSAFE = new RegExp(`[\\u0000-\\u001f${BEYOND_C0}\\\\]`, 'gu');
/** JSON.stringify escapes C0 in strings itself; raw C0 in its output is only its indentation. */
const UNSAFE_IN_JSON = new RegExp(`[${BEYOND_C0}]`, 'gu');

const SHORT: Readonly<Record<string, string>> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

const escapeOne = (char: string): string => {
  const short = SHORT[char];
  if (short) return short;
  const code = char.codePointAt(0)!;
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u{${code.toString(16)}}`;
};

/**
 * Makes any string safe to write to a terminal: every control or bidi character becomes visible
 * text (`\x1b`, `\n`, `\u{202e}`, `\\`), so what is shown can be read back to what was stored.
 */
export const escapeForTerminal = (value: string): string => value.replace(UNSAFE, escapeOne);

/** How many columns a terminal-safe string takes (one per code point; wide glyphs aside). */
export const displayWidth = (value: string): number => [...value].length;

/**
 * Text that may be written to a terminal as it is: built only by `terminal` (which escapes every
 * interpolated value) or `formatTable`, so output of a command cannot carry a raw value.
 */
export class TerminalText {
  private constructor(readonly text: string) {}

  /** @internal for this module and the table formatter: `text` must already be safe. */
  static trusted(text: string): TerminalText {
    return new TerminalText(text);
  }

  toString(): string {
    return this.text;
  }
}

const piece = (value: unknown): string =>
  value instanceof TerminalText ? value.text : escapeForTerminal(String(value));

/**
 * Template tag for human output: the literal parts are the program's own, every `${value}` is
 * escaped (a `TerminalText` is kept as it is).
 */
export const terminal = (strings: TemplateStringsArray, ...values: unknown[]): TerminalText =>
  TerminalText.trusted(
    strings.reduce((out, literal, i) => out + literal + (i < values.length ? piece(values[i]) : ''), ''),
  );

/** Joins safe lines with newlines. */
export const lines = (parts: readonly TerminalText[]): TerminalText =>
  TerminalText.trusted(parts.map((part) => part.text).join('\n'));

/**
 * Keeps JSON exact (it parses to the same value) while writing DEL, C1 and bidi characters as
 * `\u` escapes; JSON.stringify already escapes C0 controls but leaves those raw.
 */
export const terminalSafeJson = (value: unknown, indent: number = 2): string =>
  JSON.stringify(value, null, indent).replace(
    UNSAFE_IN_JSON,
    (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
