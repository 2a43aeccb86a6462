/**
 * HTML for the settings console, escaped by construction: every value interpolated into the
 * `html` template is text unless it is itself `html` output. Anything a caller sent (a recorded
 * path, a key name) is hostile: `<script>` stays text, and control characters such as terminal
 * escape sequences are shown as visible `\xNN` instead of reaching the page raw.
 */

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

// C0 and C1 controls (ESC starts terminal sequences), DEL, and the bidi overrides that can
// reorder what a person reads.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/** Control characters as visible `\xNN` / `\u{NNNN}` text. */
export const showControls = (value: string): string =>
  value.replace(CONTROL, (char) => {
    const code = char.codePointAt(0) ?? 0;
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u{${code.toString(16)}}`;
  });

export const escapeHtml = (value: string): string => showControls(value).replace(/[&<>"']/g, (c) => ENTITIES[c]!);

/** Markup that is already safe (built by `html`). */
export class Html {
  constructor(readonly markup: string) {}
  toString(): string {
    return this.markup;
  }
}

export type HtmlValue = Html | string | number | boolean | null | undefined | readonly HtmlValue[];

const render = (value: HtmlValue): string => {
  if (value instanceof Html) return value.markup;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(String(value));
};

/** Tagged template: `html\`<td>${name}</td>\`` escapes `name`. */
export const html = (strings: TemplateStringsArray, ...values: HtmlValue[]): Html =>
  new Html(strings.reduce((out, string, i) => out + string + (i < values.length ? render(values[i]!) : ''), ''));

/** JSON for a `<script type="application/json">` data block: nothing in it can close the element. */
export const jsonBlock = (id: string, value: unknown): Html =>
  new Html(
    `<script type="application/json" id="${escapeHtml(id)}">${JSON.stringify(value)
      .replace(/</g, '\\u003c')
      .replace(/>/g, '\\u003e')
      .replace(/&/g, '\\u0026')
      .replace(/\u2028/g, '\\u2028')
      .replace(/\u2029/g, '\\u2029')}</script>`,
  );
