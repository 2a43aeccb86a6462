/**
 * The console's pages, rendered on the server with `html` (so every value is escaped) and
 * styled by Pico's classless stylesheet. No inline script or style: the page's behaviour (copy
 * button, chart) is in assets/console.js, allowed by the Content-Security-Policy as 'self'.
 *
 * The keys table and the Create key form are lists (KEY_COLUMNS, KEY_ACTIONS, the form's
 * fields): a new key attribute (rate limit, allowed IPs, audit findings) or action (Roll) is one
 * more entry.
 */
import type { KeyListing } from '../operator/operations';
import type { AuditFinding } from '../operator/lifecycle';
import { SCOPES } from '../../shared/domain/schemas';
import type { UsageRecord } from '../../shared/data/repositories/usage';
import { html, jsonBlock, type Html, type HtmlValue } from './html';
import { PERIODS, STATUS_CLASSES, type Bucket, type Period, type UsageChart } from './usage-data';

export const branchPath = (branchId: string, page: 'keys' | 'usage' | 'usage.csv' = 'keys'): string =>
  `/branches/${encodeURIComponent(branchId)}/${page}`;
export const keyPath = (branchId: string, keyId: string, action: string): string =>
  `${branchPath(branchId)}/${encodeURIComponent(keyId)}/${action}`;

const withQuery = (path: string, query: Record<string, string | undefined>): string => {
  const params = new URLSearchParams(
    Object.entries(query).filter((entry): entry is [string, string] => entry[1] !== undefined && entry[1] !== ''),
  ).toString();
  return params ? `${path}?${params}` : path;
};

/** `2026-11-23T01:26:12.345Z` → `2026-11-23 01:26 UTC`, in a <time> element. */
const time = (iso: string | null | undefined): HtmlValue =>
  iso ? html`<time datetime="${iso}">${iso.slice(0, 16).replace('T', ' ')} UTC</time>` : '—';

interface Layout {
  title: string;
  branchId?: string;
  current?: 'keys' | 'usage';
  scripts?: string[];
  body: Html;
}

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
            ${
              branchId
                ? html`<li>
                      <a href="${branchPath(branchId, 'keys')}" ${current === 'keys' ? html`aria-current="page"` : ''}
                        >API keys</a
                      >
                    </li>
                    <li>
                      <a href="${branchPath(branchId, 'usage')}" ${current === 'usage' ? html`aria-current="page"` : ''}
                        >API usage</a
                      >
                    </li>`
                : ''
            }
            <li><a href="/">Choose a branch</a></li>
          </ul>
        </nav>
      </header>
      <main>${body}</main>
    </body>
  </html>`}\n`;

export const messagePage = (title: string, message: string, branchId?: string): string =>
  layout({
    title,
    ...(branchId ? { branchId } : {}),
    body: html`<h1>${title}</h1>
      <p>${message}</p>`,
  });

export const homePage = (branches: readonly string[], error?: string): string =>
  layout({
    title: 'Choose a branch',
    body: html`<h1>Choose a branch</h1>
      ${error ? html`<p role="alert" class="error">${error}</p>` : ''}
      ${
        branches.length
          ? html`<ul>
              ${branches.map(
                (id) =>
                  html`<li>
                    <code>${id}</code>: <a href="${branchPath(id, 'keys')}">API keys</a> ·
                    <a href="${branchPath(id, 'usage')}">API usage</a>
                  </li>`,
              )}
            </ul>`
          : ''
      }
      <form method="get" action="/branches">
        <label for="branch">Branch id</label>
        <input id="branch" name="branch" required autocomplete="off" placeholder="br_…" />
        <button type="submit">Open</button>
      </form>`,
  });

/** A key as the keys page shows it: its listing and, for an active key, its audit findings. */
export interface KeyRow extends KeyListing {
  findings?: readonly AuditFinding[];
}

export interface KeyColumn {
  header: string;
  cell(key: KeyRow): HtmlValue;
}

const rollLinks = (k: KeyRow): HtmlValue =>
  k.rolled_from || k.rolled_to
    ? html`<br /><small
          >${k.rolled_from ? html`rolled from <code>${k.rolled_from}</code>` : ''}
          ${k.rolled_to ? html`rolled to <code>${k.rolled_to}</code>` : ''}</small
        >`
    : '';

const findingsCell = (k: KeyRow): HtmlValue =>
  k.findings === undefined
    ? '–'
    : k.findings.length === 0
      ? 'none'
      : html`<ul class="findings">
          ${k.findings.map((finding) => html`<li><code>${finding.code}</code>: ${finding.message}</li>`)}
        </ul>`;

/** The keys table's columns, in order (the first is the row header). */
export const KEY_COLUMNS: KeyColumn[] = [
  {
    header: 'Name',
    cell: (k) =>
      html`${k.name}<br /><small><code>${k.key_id}</code></small
        >${rollLinks(k)}`,
  },
  { header: 'Status', cell: (k) => html`<span class="status-${k.status}">${k.status}</span>` },
  { header: 'Start', cell: (k) => html`<code>${k.start}…</code>` },
  { header: 'Scopes', cell: (k) => k.scopes.join(', ') },
  { header: 'Rate limit', cell: (k) => k.rate_limit ?? 'default' },
  { header: 'Allowed IPs', cell: (k) => (k.allowed_ips?.length ? k.allowed_ips.join(', ') : 'any') },
  { header: 'Created', cell: (k) => time(k.created_at) },
  { header: 'Expires', cell: (k) => (k.expires_at ? time(k.expires_at) : 'never') },
  { header: 'Last used', cell: (k) => (k.last_used_at ? time(k.last_used_at) : 'never') },
  { header: 'Audit findings', cell: findingsCell },
];

export interface KeyAction {
  /** The button's accessible name, e.g. "Revoke". */
  label: string;
  /** Path segment of its confirmation page, e.g. "revoke". */
  action: string;
  /** Its past participle, for messages: "revoked". */
  done: string;
  applies(key: KeyListing): boolean;
}

/** Per-key actions: each opens a confirmation page whose POST does it. */
export const KEY_ACTIONS: KeyAction[] = [
  { label: 'Roll', action: 'roll', done: 'rolled', applies: (k) => k.status === 'active' && !k.rolled_to },
  { label: 'Revoke', action: 'revoke', done: 'revoked', applies: (k) => k.status !== 'revoked' },
];

/** Grace periods a roll offers (lib/operator/lifecycle.ts parseGrace reads them). */
export const GRACE_CHOICES = [
  { value: '0', label: 'none: the old key stops now' },
  { value: '15m', label: '15 minutes' },
  { value: '1h', label: '1 hour' },
  { value: '24h', label: '24 hours' },
  { value: '7d', label: '7 days' },
] as const;

export interface CreateKeyForm {
  name?: string;
  scopes?: string[];
  expires?: string;
  allowIps?: string;
  rateLimit?: string;
}

/** Keys per page: "last used" costs one query per key shown (docs/console.md "Figures"). */
export const KEYS_PAGE_SIZE = 100;

export interface KeysPageInput {
  branchId: string;
  /** This page's keys. */
  keys: KeyRow[];
  /** How many keys the branch has. */
  total: number;
  /** 1-based. */
  page: number;
  csrf: string;
  formId: string;
  /** Just created (or rolled to): its value, shown this once. */
  created?: { key: string; name: string; keyId: string; note?: string };
  notice?: string;
  error?: string;
  form?: CreateKeyForm;
}

const hidden = (csrf: string, extra: Record<string, string> = {}): Html =>
  html`<input type="hidden" name="_csrf" value="${csrf}" />${Object.entries(extra).map(
      ([name, value]) => html`<input type="hidden" name="${name}" value="${value}" />`,
    )}`;

const createdPanel = (created: NonNullable<KeysPageInput['created']>): Html =>
  html`<article class="new-key" aria-labelledby="new-key-title">
    <h2 id="new-key-title">Key created: copy it now</h2>
    <p role="alert">
      <strong>This is the only time the key's value is shown.</strong> It is not stored anywhere and cannot be shown
      again: copy it now and keep it somewhere safe. If it is lost, create a new key and revoke this one.
    </p>
    <p>
      <code id="new-key-value" class="key-value">${created.key}</code>
    </p>
    <p>
      <button type="button" data-copy="new-key-value">Copy key</button>
      <span id="copy-status" role="status" aria-live="polite"></span>
    </p>
    <p>
      <small>Key <code>${created.keyId}</code> (${created.name}).</small>
    </p>
    ${created.note ? html`<p role="status">${created.note}</p>` : ''}
  </article>`;

const createForm = (input: KeysPageInput): Html => {
  const form = input.form ?? {};
  const scopes = new Set(form.scopes ?? ['read']);
  return html`<section aria-labelledby="create-title">
    <h2 id="create-title">Create a key</h2>
    ${input.error ? html`<p role="alert" class="error">${input.error}</p>` : ''}
    <form method="post" action="${branchPath(input.branchId, 'keys')}" autocomplete="off">
      ${hidden(input.csrf, { _form: input.formId })}
      <label for="key-name">Name</label>
      <input id="key-name" name="name" maxlength="200" placeholder="e.g. reporting job" value="${form.name ?? ''}" />
      <fieldset>
        <legend>Scopes</legend>
        ${SCOPES.map(
          (scope) =>
            html`<label
              ><input type="checkbox" name="scopes" value="${scope}" ${scopes.has(scope) ? html`checked` : ''} />
              ${scope}</label
            >`,
        )}
      </fieldset>
      <label for="key-expires">Expires (UTC, optional)</label>
      <input id="key-expires" name="expires" type="datetime-local" value="${form.expires ?? ''}" />
      <label for="key-allow-ips">Allowed IPs (optional: addresses or CIDR blocks, comma-separated)</label>
      <input
        id="key-allow-ips"
        name="allow_ips"
        placeholder="203.0.113.0/24, 2001:db8::1"
        value="${form.allowIps ?? ''}"
      />
      <label for="key-rate-limit">Rate limit (optional: N/s, N/min or N/h; empty for the default)</label>
      <input id="key-rate-limit" name="rate_limit" placeholder="20/s" value="${form.rateLimit ?? ''}" />
      <button type="submit">Create key</button>
    </form>
  </section>`;
};

const keysCaption = ({ keys, total, page, branchId }: KeysPageInput): Html => {
  const first = (page - 1) * KEYS_PAGE_SIZE + 1;
  return total <= KEYS_PAGE_SIZE
    ? html`${total} key(s) of branch <code>${branchId}</code>, newest first`
    : html`Keys ${keys.length ? first : 0}–${first + keys.length - 1} of ${total}, branch <code>${branchId}</code>,
        newest first`;
};

const keysPager = ({ branchId, page, total }: KeysPageInput): HtmlValue => {
  const pages = Math.ceil(total / KEYS_PAGE_SIZE);
  if (pages <= 1) return '';
  const link = (to: number, label: string) =>
    html`<li><a href="${withQuery(branchPath(branchId, 'keys'), { page: String(to) })}">${label}</a></li>`;
  return html`<nav aria-label="Key pages">
    <ul>
      ${page > 1 ? link(page - 1, 'Newer keys') : ''}
      <li>Page ${page} of ${pages}</li>
      ${page < pages ? link(page + 1, 'Older keys') : ''}
    </ul>
  </nav>`;
};

export const keysPage = (input: KeysPageInput): string =>
  layout({
    title: 'API keys',
    branchId: input.branchId,
    current: 'keys',
    body: html`<h1>API keys</h1>
      ${input.created ? createdPanel(input.created) : ''}
      ${input.notice ? html`<p role="status" class="notice">${input.notice}</p>` : ''}
      <div class="scroll">
        <table>
          <caption>
            ${keysCaption(input)}
          </caption>
          <thead>
            <tr>
              ${KEY_COLUMNS.map((column) => html`<th scope="col">${column.header}</th>`)}
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            ${input.keys.map(
              (key) =>
                html`<tr>
                  ${KEY_COLUMNS.map((column, i) =>
                    i === 0 ? html`<th scope="row">${column.cell(key)}</th>` : html`<td>${column.cell(key)}</td>`,
                  )}
                  <td>
                    ${KEY_ACTIONS.filter((a) => a.applies(key)).map(
                      (a) =>
                        html`<form method="get" action="${keyPath(input.branchId, key.key_id, a.action)}">
                          <button type="submit" class="secondary" aria-describedby="key-${key.key_id}">
                            ${a.label}
                          </button>
                        </form>`,
                    )}
                    <span hidden id="key-${key.key_id}">${key.name}</span>
                  </td>
                </tr>`,
            )}
          </tbody>
        </table>
      </div>
      ${keysPager(input)} ${createForm(input)}`,
  });

export const confirmPage = (input: {
  branchId: string;
  key: KeyListing;
  action: KeyAction;
  consequence: string;
  csrf: string;
  /** Sent once only (a roll shows a new key's value: a re-sent form must not roll again). */
  formId?: string;
  /** Fields the action takes (a roll's grace period). */
  fields?: Html;
}): string =>
  layout({
    title: `${input.action.label} key`,
    branchId: input.branchId,
    current: 'keys',
    body: html`<h1>${input.action.label} key “${input.key.name}”?</h1>
      <p>
        Key <code>${input.key.key_id}</code>, starting <code>${input.key.start}…</code>, scopes
        ${input.key.scopes.join(', ')}.
      </p>
      <p>${input.consequence}</p>
      <form method="post" action="${keyPath(input.branchId, input.key.key_id, input.action.action)}">
        ${hidden(input.csrf, input.formId ? { _form: input.formId } : {})} ${input.fields ?? ''}
        <button type="submit">${input.action.label}</button>
        <a href="${branchPath(input.branchId, 'keys')}">Cancel</a>
      </form>`,
  });

export interface UsagePageInput {
  branchId: string;
  keys: { key_id: string; name: string; start: string }[];
  keyId?: string;
  period: Period;
  bucket: Bucket;
  chart: UsageChart;
  log: UsageRecord[];
  cursor?: string;
  nextCursor?: string;
}

const chartTable = (chart: UsageChart): Html =>
  html`<details>
    <summary>Chart data as a table</summary>
    <div class="scroll">
      <table id="usage-chart-table">
        <thead>
          <tr>
            <th scope="col">${chart.bucket === 'hour' ? 'Hour' : 'Day'} (UTC)</th>
            ${STATUS_CLASSES.map((cls) => html`<th scope="col">${cls}</th>`)}
          </tr>
        </thead>
        <tbody>
          ${chart.starts.map(
            (start, i) =>
              html`<tr>
                <th scope="row">
                  ${chart.bucket === 'hour' ? start.slice(0, 13).replace('T', ' ') + ':00' : start.slice(0, 10)}
                </th>
                ${STATUS_CLASSES.map((cls) => html`<td>${chart.counts[cls][i]}</td>`)}
              </tr>`,
          )}
        </tbody>
      </table>
    </div>
  </details>`;

export const usagePage = (input: UsagePageInput): string => {
  const filters = { key: input.keyId, period: input.period, bucket: input.bucket };
  const usagePath = branchPath(input.branchId, 'usage');
  const { chart } = input;
  const per = chart.bucket === 'hour' ? 'hour' : 'day';
  return layout({
    title: 'API usage',
    branchId: input.branchId,
    current: 'usage',
    scripts: ['/assets/chart.umd.min.js'],
    body: html`<h1>API usage</h1>
      <form method="get" action="${usagePath}" class="filters">
        <label for="filter-key"
          >Key
          <select id="filter-key" name="key">
            <option value="">All keys</option>
            ${input.keys.map(
              (k) =>
                html`<option value="${k.key_id}" ${k.key_id === input.keyId ? html`selected` : ''}>
                  ${k.name} (${k.start}…)
                </option>`,
            )}
          </select></label
        >
        <label for="filter-period"
          >Period
          <select id="filter-period" name="period">
            ${Object.entries(PERIODS).map(
              ([value, p]) =>
                html`<option value="${value}" ${value === input.period ? html`selected` : ''}>${p.label}</option>`,
            )}
          </select></label
        >
        <label for="filter-bucket"
          >Calls per
          <select id="filter-bucket" name="bucket">
            <option value="hour" ${input.bucket === 'hour' ? html`selected` : ''}>Hour</option>
            <option value="day" ${input.bucket === 'day' ? html`selected` : ''}>Day</option>
          </select></label
        >
        <button type="submit">Apply</button>
      </form>
      <section aria-labelledby="chart-title">
        <h2 id="chart-title">Calls per ${per}, by status class</h2>
        <p id="usage-summary">
          <strong>${chart.total}</strong> call(s) · latency p50 <strong>${chart.p50_ms ?? '—'}</strong> ms · p95
          <strong>${chart.p95_ms ?? '—'}</strong> ms
        </p>
        <p id="usage-freshness">Counted as of ${time(chart.as_of)}</p>
        ${
          chart.set_aside
            ? html`<p role="alert" class="error" id="usage-set-aside">
                ${chart.set_aside.count} call(s) from ${time(chart.set_aside.oldest)} to ${time(chart.set_aside.newest)}
                could not be aggregated and are not in these figures. Repair: <code>${chart.set_aside.repair}</code>
              </p>`
            : ''
        }
        <div class="chart">
          <canvas
            id="usage-chart"
            role="img"
            aria-label="Bar chart: calls per ${per} by status class; the same figures are in the table below"
          ></canvas>
        </div>
        ${jsonBlock('usage-chart-data', chart)} ${chartTable(chart)}
      </section>
      <section aria-labelledby="log-title">
        <h2 id="log-title">Log</h2>
        <p>
          <a href="${withQuery(branchPath(input.branchId, 'usage.csv'), filters)}" download>Export CSV</a> (every call
          the filters select)
        </p>
        <div class="scroll">
          <table id="usage-log">
            <caption>
              Calls, newest first${input.cursor ? ' (older page)' : ''}
            </caption>
            <thead>
              <tr>
                <th scope="col">Time (UTC)</th>
                <th scope="col">Key</th>
                <th scope="col">Method</th>
                <th scope="col">Path</th>
                <th scope="col">Status</th>
                <th scope="col">ms</th>
                <th scope="col">Request id</th>
              </tr>
            </thead>
            <tbody>
              ${input.log.map(
                (r) =>
                  html`<tr>
                    <th scope="row"><time datetime="${r.timestamp}">${r.timestamp}</time></th>
                    <td><code>${r.key_id}</code></td>
                    <td>${r.method}</td>
                    <td><code>${r.path}</code></td>
                    <td>${r.status}</td>
                    <td>${r.response_time_ms}</td>
                    <td><code>${r.request_id}</code></td>
                  </tr>`,
              )}
            </tbody>
          </table>
        </div>
        ${input.log.length === 0 ? html`<p>No calls in this period.</p>` : ''}
        <nav aria-label="Log pages">
          <ul>
            ${input.cursor ? html`<li><a href="${withQuery(usagePath, filters)}">Newest calls</a></li>` : ''}
            ${
              input.nextCursor
                ? html`<li>
                    <a href="${withQuery(usagePath, { ...filters, cursor: input.nextCursor })}">Older calls</a>
                  </li>`
                : ''
            }
          </ul>
        </nav>
      </section>`,
  });
};

/** The grace-period choice of a roll's confirmation page. */
export const graceField = (): Html =>
  html`<label for="grace">Grace period</label>
    <select id="grace" name="grace">
      ${GRACE_CHOICES.map(
        (choice) =>
          html`<option value="${choice.value}" ${choice.value === '24h' ? html`selected` : ''}>
            ${choice.label}
          </option>`,
      )}
    </select>`;
