/**
 * The console's page frame and the pieces every page shares: navigation, times, form fields
 * with their errors, hidden security fields. Rendered with `html` (hono/html), so every value is
 * escaped; no inline script or style (the Content-Security-Policy allows neither).
 */
import { html as honoHtml, raw } from 'hono/html';
import type { HtmlEscapedString } from 'hono/utils/html';

/** Markup built by `html`. */
export type Html = HtmlEscapedString;
export type HtmlValue = Html | string | number | false | null | undefined | readonly HtmlValue[];

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

const visible = (value: HtmlValue): HtmlValue =>
  typeof value === 'string' ? showControls(value) : Array.isArray(value) ? value.map(visible) : value;

/**
 * hono/html, which escapes every value that is not its own output, with control characters
 * (terminal escapes, bidi overrides) shown as text. No value is a promise, so neither is the result.
 */
export const html = (strings: TemplateStringsArray, ...values: HtmlValue[]): Html =>
  honoHtml(strings, ...values.map(visible)) as Html;

/** JSON for a `<script type="application/json">` data block: nothing in it can close the element. */
export const jsonBlock = (id: string, value: unknown): Html => {
  const json = JSON.stringify(value).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
  return html`<script type="application/json" id="${id}">
    ${raw(json)}
  </script>`;
};

export type ConsolePage = 'keys' | 'usage' | 'usage.csv' | 'activity';

export const branchPath = (branchId: string, page: ConsolePage = 'keys'): string =>
  `/branches/${encodeURIComponent(branchId)}/${page}`;
export const keyPath = (branchId: string, keyId: string, action: string): string =>
  `${branchPath(branchId)}/${encodeURIComponent(keyId)}/${action}`;

export const withQuery = (path: string, query: Record<string, string | undefined>): string => {
  const params = new URLSearchParams(
    Object.entries(query).filter((entry): entry is [string, string] => entry[1] !== undefined && entry[1] !== ''),
  ).toString();
  return params ? `${path}?${params}` : path;
};

/**
 * A time: UTC in the page (`2026-11-23 01:26 UTC`), rewritten to the reader's time zone, named,
 * by assets/console.js, with the UTC instant on hover (`title`) either way. `seconds` for a
 * call's time; `utcDay` for a day counted in UTC (the rollups' days), shown as that UTC date.
 */
export const time = (
  iso: string | null | undefined,
  empty = '—',
  { seconds = false, utcDay = false } = {},
): HtmlValue =>
  iso
    ? html`<time
        datetime="${iso}"
        title="${iso}"
        ${seconds ? html`data-seconds` : ''}
        ${utcDay ? html`data-utc-day` : ''}
        >${utcDay ? `${iso.slice(0, 10)} (UTC day)` : `${iso.slice(0, seconds ? 19 : 16).replace('T', ' ')} UTC`}</time
      >`
    : empty;

/** An ISO 8601 UTC instant inside a message (`expires at 2026-11-30T09:00:00.000Z`), captured. */
const ISO_INSTANT = /(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?Z)/;

/** A message from the operator library with each instant in it shown as every other time. */
export const textWithTimes = (text: string): Html =>
  html`${text.split(ISO_INSTANT).map((part, i) => (i % 2 ? time(part) : part))}`;

/**
 * Text that may wrap only after each `separator` (a `<wbr>` there), not in the middle of a word:
 * a recorded path after a `/`, an IPv6 address after a `:` (an IPv4 one not at all).
 */
export const wrapAfter = (text: string, separator: string): Html =>
  html`${text.split(separator).map((part, i) => (i === 0 ? part : html`${separator}<wbr />${part}`))}`;

/** The hidden fields of every POST form: the session's CSRF token, and a one-use form id when given. */
export const hidden = (csrf: string, formId?: string): Html =>
  html`<input type="hidden" name="_csrf" value="${csrf}" />${
      formId ? html`<input type="hidden" name="_form" value="${formId}" />` : ''
    }`;

/** An error refused by the operator library, placed next to the field it names (or above the form). */
export interface FormError {
  message: string;
  /** The form field's name (`name`, `scopes`, …); absent for an error of the whole form. */
  field?: string;
}

/** Attributes and message of a field with an error: `aria-invalid`, described by the message, focused. */
export const fieldError = (id: string, name: string, error: FormError | undefined) => {
  const invalid = error?.field === name;
  return {
    attributes: invalid ? html`aria-invalid="true" aria-describedby="${id}-error" autofocus` : html``,
    message: invalid ? html`<small id="${id}-error" class="field-error">${error.message}</small>` : html``,
  };
};

/** A labelled text input, with its error next to it. */
export const textField = (input: {
  id: string;
  name: string;
  label: HtmlValue;
  value: string;
  error: FormError | undefined;
  extra?: Html;
}): Html => {
  const { attributes, message } = fieldError(input.id, input.name, input.error);
  return html`<label for="${input.id}">${input.label}</label>
    <input id="${input.id}" name="${input.name}" value="${input.value}" ${attributes} ${input.extra ?? ''} />
    ${message}`;
};

/** A labelled choice (`filter-‹name›` unless `id` is given); undefined selects the option whose value is empty. */
export const select = (
  label: string,
  name: string,
  options: readonly (readonly [value: string, text: string])[],
  selected: string | undefined,
  id = `filter-${name}`,
): Html =>
  html`<label for="${id}"
    >${label}
    <select id="${id}" name="${name}">
      ${options.map(
        ([value, text]) =>
          html`<option value="${value}" ${value === (selected ?? '') ? html`selected` : ''}>${text}</option>`,
      )}
    </select></label
  >`;

export interface Column<T> {
  header: string;
  cell(row: T): HtmlValue;
}

/**
 * A list as a table on a laptop and as cards on a phone (assets/console.css): the first column
 * is each row's header; on a phone every other cell shows its column's name beside one box.
 */
export const cardsTable = <T>(
  id: string,
  caption: HtmlValue,
  columns: readonly Column<T>[],
  rows: readonly T[],
  rowAttributes: (row: T) => Html | '' = () => '',
): Html =>
  html`<table id="${id}" class="cards">
    <caption>
      ${caption}
    </caption>
    <thead>
      <tr>
        ${columns.map((column) => html`<th scope="col">${column.header}</th>`)}
      </tr>
    </thead>
    <tbody>
      ${rows.map(
        (row) =>
          html`<tr ${rowAttributes(row)}>
            ${columns.map(({ header, cell }, i) =>
              i === 0
                ? html`<th scope="row">${cell(row)}</th>`
                : html`<td data-label="${header}"><div>${cell(row)}</div></td>`,
            )}
          </tr>`,
      )}
    </tbody>
  </table>`;

/** Links to the pages beside this one (`<a>`s); an item that is false is left out. */
export const pager = (label: string, items: readonly (Html | false)[]): Html =>
  html`<nav aria-label="${label}">
    <ul>
      ${items.map((item) => item && html`<li>${item}</li>`)}
    </ul>
  </nav>`;

interface Layout {
  title: string;
  branchId?: string;
  current?: ConsolePage;
  scripts?: string[];
  body: Html;
}

const NAV: { page: ConsolePage; label: string }[] = [
  { page: 'keys', label: 'API keys' },
  { page: 'usage', label: 'API usage' },
  { page: 'activity', label: 'Activity' },
];

const navLinks = (branchId: string, current: ConsolePage | undefined): Html =>
  html`${NAV.map(
    ({ page, label }) =>
      html`<li>
        <a href="${branchPath(branchId, page)}" ${current === page ? html`aria-current="page"` : ''}>${label}</a>
      </li>`,
  )}`;

export const layout = ({ title, branchId, current, scripts = [], body }: Layout): string =>
  `<!doctype html>\n${html`<html lang="en">
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <meta name="referrer" content="no-referrer" />
      <title>${title} · Branch API settings</title>
      <link rel="icon" href="data:," />
      <link rel="stylesheet" href="/assets/pico.classless.min.css" />
      <link rel="stylesheet" href="/assets/console.css" />
      ${['/assets/console.js', ...scripts].map((src) => html`<script src="${src}" defer></script>`)}
    </head>
    <body>
      <header>
        <nav aria-label="Settings">
          <ul>
            <li><strong>Branch API settings</strong></li>
            ${branchId ? html`<li>Branch <code>${branchId}</code></li>` : ''}
          </ul>
          <ul>
            ${branchId ? navLinks(branchId, current) : ''}
            <li><a href="/">Choose a branch</a></li>
          </ul>
        </nav>
      </header>
      <main>${body}</main>
    </body>
  </html>`}\n`;

export const messagePage = (title: string, message: string): string =>
  layout({
    title,
    body: html`<h1>${title}</h1>
      <p>${message}</p>
      <p><a href="/">Back to the console</a></p>`,
  });

export const homePage = (branches: readonly { id: string; name?: string | undefined }[], error?: string): string =>
  layout({
    title: 'Choose a branch',
    body: html`<h1>Choose a branch</h1>
      ${
        branches.length
          ? html`<ul>
              ${branches.map(
                ({ id, name }) =>
                  html`<li>
                    ${name ? html`<strong>${name}</strong> ` : ''}<code>${id}</code>:
                    <a href="${branchPath(id, 'keys')}">API keys of ${id}</a> ·
                    <a href="${branchPath(id, 'usage')}">API usage of ${id}</a>
                  </li>`,
              )}
            </ul>`
          : html`<p>Enter the id of the branch whose keys and usage you want to see.</p>`
      }
      <form method="get" action="/branches">
        ${textField({
          id: 'branch',
          name: 'branch',
          label: 'Branch id',
          value: '',
          error: error ? { field: 'branch', message: error } : undefined,
          extra: html`required autocomplete="off" placeholder="br_…"`,
        })}
        <button type="submit">Open branch</button>
      </form>`,
  });
