/**
 * The "API keys" page: Create key at the top, search and status filter, the keys as a table on a
 * laptop and as cards on a phone (assets/console.css), and per key the actions that apply, each
 * with its own accessible name ("Revoke key ‹name›").
 *
 * Columns and actions are lists (KEY_COLUMNS, KEY_ACTIONS): a new key attribute or action is one
 * more entry.
 */
import { KEY_STATES, type KeyState } from '../../shared/domain/key-state';
import { rollLinks } from '../operator/format';
import type { AuditFinding, LastUse } from '../operator/key-audit';
import type { KeyListing } from '../operator/keys';
import { keyForm, keyFormValues, type KeyFormValues } from './key-form';
import {
  branchPath,
  cardsTable,
  hidden,
  html,
  keyPath,
  layout,
  pager,
  select,
  textWithTimes,
  time,
  withQuery,
  type Column,
  type FormError,
  type Html,
  type HtmlValue,
} from './layout';

/** A key as the keys page shows it: its listing and, for an active key, its audit findings. */
export interface KeyRow extends KeyListing {
  findings?: readonly AuditFinding[];
}

/** `rolled from ‹key›, to ‹key›`, as the CLI's key list says it. */
const rolled = (k: KeyRow): HtmlValue => {
  const links = rollLinks(k).map(([direction, keyId]) => html`${direction} <code>${keyId}</code>`);
  return links.length ? html`<br /><small>rolled ${links.map((link, i) => (i ? html`, ${link}` : link))}</small>` : '';
};

/** Its last accepted call, and on its own line its last refused one and why. */
export const lastUse = (k: LastUse): Html =>
  html`${time(k.last_used_at, 'never')}${
    k.last_refused
      ? html`<br /><small class="refused">last refused ${time(k.last_refused.at)} as ${k.last_refused.as}</small>`
      : ''
  }`;

/** An active key's audit findings, counted in its row; the findings themselves open in its menu. */
const findingsCount = (k: KeyRow): HtmlValue => {
  if (k.findings === undefined) return '–';
  if (k.findings.length === 0) return 'none';
  return html`<span class="finding-count">${k.findings.length} finding${k.findings.length === 1 ? '' : 's'}</span>`;
};

const findingsList = (findings: readonly AuditFinding[]): Html =>
  html`<p><strong>Audit findings</strong></p>
    <ul class="findings">
      ${findings.map((finding) => html`<li><code>${finding.code}</code>: ${textWithTimes(finding.message)}</li>`)}
    </ul>`;

/**
 * The keys table's columns, in order (the first is the row header): one line per key on a
 * laptop, so a screen holds about fifteen; the rest of a key's settings are on its Edit page.
 */
export const KEY_COLUMNS: Column<KeyRow>[] = [
  {
    header: 'Key',
    cell: (k) =>
      html`<strong>${k.name}</strong> <code class="key-start">${k.start}…</code> <small><code>${k.key_id}</code></small
        >${rolled(k)}`,
  },
  { header: 'Status', cell: (k) => html`<span class="status status-${k.status}">${k.status}</span>` },
  {
    header: 'Scopes',
    // The limits only where they differ from the defaults.
    cell: (k) =>
      html`${k.scopes.join(', ')}${k.rate_limit ? html` <small>· ${k.rate_limit}</small>` : ''}${
        k.allowed_ips?.length ? html` <small>· ${k.allowed_ips.join(', ')}</small>` : ''
      }`,
  },
  { header: 'Last used', cell: (k) => lastUse(k) },
  { header: 'Expires', cell: (k) => time(k.expires_at, 'never') },
  { header: 'Audit', cell: findingsCount },
];

export interface KeyAction {
  /** The visible label, e.g. "Revoke"; its accessible name adds the key ("Revoke key ‹name›"). */
  label: string;
  /** Path segment of its page, e.g. "revoke". */
  action: string;
  /** Its past participle, for messages: "revoked". */
  done: string;
  applies(key: KeyListing): boolean;
  /** What its confirmation page says it does; an action that stops a key's calls is styled as danger. */
  consequence?: string;
  danger?: true;
}

/** Per-key actions: each opens a page (a form or a confirmation) whose POST does it. */
export const KEY_ACTIONS: KeyAction[] = [
  { label: 'Edit', action: 'edit', done: 'edited', applies: (k) => k.status === 'active' || k.status === 'disabled' },
  {
    label: 'Disable',
    action: 'disable',
    done: 'disabled',
    applies: (k) => k.status === 'active' || k.status === 'grace',
    consequence:
      'Calls with this key answer 401 disabled_api_key from the next request on, until it is enabled again. ' +
      'Nothing else about the key changes.',
    danger: true,
  },
  {
    label: 'Enable',
    action: 'enable',
    done: 'enabled',
    applies: (k) => k.status === 'disabled',
    consequence: 'Calls with this key are accepted again from the next request on.',
  },
  {
    label: 'Roll',
    action: 'roll',
    done: 'rolled',
    applies: (k) => k.status === 'active' && !k.rolled_to,
    consequence:
      'A new key with the same scopes, rate limit, allowed IPs and expiry is created and shown once. ' +
      'This key keeps working until the grace period ends, then it is refused.',
    danger: true,
  },
  {
    label: 'Revoke',
    action: 'revoke',
    done: 'revoked',
    applies: (k) => k.status !== 'revoked',
    consequence: 'Calls with this key are refused from the next request on. This cannot be undone.',
    danger: true,
  },
];

/** What the keys page says after each change (`done` of doneRedirect). */
export const DONE_NOTICES: Record<string, string> = {
  updated: 'is updated: the change applies from its next call.',
  disabled: 'is disabled: its calls answer 401 disabled_api_key until it is enabled.',
  enabled: 'is enabled again.',
  revoked: 'is revoked.',
};

/** Keys per page: five phone screens; the audit reads each shown key's rollups (docs/console.md "Figures"). */
export const KEYS_PAGE_SIZE = 50;

export interface KeyFilters {
  /** Part of a name or key id (any case), or the start of a key's value. */
  q?: string;
  /** Any key state (shared/domain/key-state.ts). */
  status?: KeyState;
  /** A whole value was searched and no key of the branch has it. */
  noValue?: boolean;
}

export interface KeysPageInput {
  branchId: string;
  /** This page's keys. */
  keys: KeyRow[];
  /** How many keys the filters select. */
  total: number;
  /** How many keys the branch has. */
  branchTotal: number;
  /** The newest call time the rollups include: "Last used" and the findings count calls up to it. */
  asOf: string | null;
  filters: KeyFilters;
  /** 1-based. */
  page: number;
  csrf: string;
  formId: string;
  /** Just created (or rolled to): its value, shown this once. */
  created?: { key: string; name: string; keyId: string; note?: string };
  notice?: string;
  /** What an action left undone for now (its activity entry or key event: lib/operator/keys.ts pendingNotice). */
  warnings?: string[];
  /** A refusal of the page as a whole (a re-sent form, a refused roll). */
  alert?: string;
  /** The Create key form's refusal: next to its field. */
  error?: FormError;
  form?: KeyFormValues;
}

const createdPanel = (created: NonNullable<KeysPageInput['created']>): Html =>
  html`<article class="new-key" aria-labelledby="new-key-title">
    <h2 id="new-key-title">Key created: copy it now</h2>
    <p role="alert">
      <strong>This is the only time the key's value is shown.</strong> It is not stored anywhere and cannot be shown
      again: copy it now and keep it somewhere safe. If it is lost, create a new key and revoke this one.
    </p>
    <p><code id="new-key-value" class="key-value">${created.key}</code></p>
    <p>
      <button type="button" data-copy="new-key-value">Copy key</button>
      <span id="copy-status" role="status" aria-live="polite"></span>
    </p>
    <p>
      <small>Key <code>${created.keyId}</code> (${created.name}).</small>
    </p>
    ${created.note ? html`<p role="status">${textWithTimes(created.note)}</p>` : ''}
  </article>`;

const createPanel = (input: KeysPageInput): Html =>
  html`<details class="create" ${input.error || input.branchTotal === 0 ? html`open` : ''}>
    <summary role="button">Create key</summary>
    <section aria-labelledby="create-title">
      <h2 id="create-title">Create a key</h2>
      ${keyForm({
        action: branchPath(input.branchId, 'keys'),
        csrf: input.csrf,
        formId: input.formId,
        values: input.form ?? { scopes: ['read'] },
        error: input.error,
        submit: 'Create this key',
      })}
    </section>
  </details>`;

/**
 * Search and status filter. With the console's script they apply as they change (it fetches the
 * page and swaps in its `keys-results`, so typing keeps the focus) and the button hides; without
 * it, the button sends the form.
 */
const filterForm = ({ branchId, filters }: KeysPageInput): Html =>
  html`<form
    method="get"
    action="${branchPath(branchId, 'keys')}"
    class="filters"
    role="search"
    data-auto-filter="keys-results"
  >
    <label for="filter-q"
      >Search name, id or key value
      <input id="filter-q" name="q" type="search" value="${filters.q ?? ''}" placeholder="wsk_F9Lf…" autocomplete="off"
    /></label>
    ${select('Status', 'status', [['', 'Any status'], ...KEY_STATES.map((s) => [s, s] as const)], filters.status)}
    <button type="submit">Filter keys</button>
    <p class="visually-hidden" role="status" data-filter-status></p>
  </form>`;

const keysCaption = ({ keys, total, page, branchId, filters }: KeysPageInput): Html => {
  const first = (page - 1) * KEYS_PAGE_SIZE + 1;
  const filtered = filters.q !== undefined || filters.status !== undefined ? ' matching the filters' : '';
  return total <= KEYS_PAGE_SIZE
    ? html`${total} key(s)${filtered} of branch <code>${branchId}</code>, newest first`
    : html`Keys ${keys.length ? first : 0}–${first + keys.length - 1} of ${total}${filtered}, branch
        <code>${branchId}</code>, newest first`;
};

const keysPager = ({ branchId, page, total, filters }: KeysPageInput): HtmlValue => {
  const pages = Math.ceil(total / KEYS_PAGE_SIZE);
  const link = (to: number, label: string) =>
    html`<a
      href="${withQuery(branchPath(branchId, 'keys'), { q: filters.q, status: filters.status, page: String(to) })}"
      >${label}</a
    >`;
  return (
    pages > 1 &&
    pager('Key pages', [
      page > 1 && link(page - 1, 'Newer keys'),
      html`Page ${page} of ${pages}`,
      page < pages && link(page + 1, 'Older keys'),
    ])
  );
};

/** A key's audit findings and actions behind one menu button, so a row stays one line; each link names its key. */
const actionsCell = (branchId: string, key: KeyRow): Html => {
  const actions = KEY_ACTIONS.filter((a) => a.applies(key));
  const findings = key.findings ?? [];
  if (actions.length === 0 && findings.length === 0) return html`—`;
  return html`<details class="menu">
    <summary aria-label="Actions for key ${key.name} (${key.key_id})">Actions</summary>
    <div class="actions">
      ${findings.length ? findingsList(findings) : ''}
      ${actions.map(
        (a) =>
          html`<a
            href="${keyPath(branchId, key.key_id, a.action)}"
            class="action action-${a.action}${a.danger ? ' danger' : ''}"
            aria-label="${a.label} key ${key.name} (${key.key_id})"
            >${a.label}</a
          >`,
      )}
    </div>
  </details>`;
};

const emptyState = (input: KeysPageInput): Html =>
  input.branchTotal === 0
    ? html`<p class="empty">
        This branch has no API keys yet. Use <strong>Create key</strong> above to make one: its value is shown once.
      </p>`
    : html`<p class="empty">
        ${input.filters.noValue ? 'No key of this branch has that value. ' : ''}No key matches these filters.
        <a href="${branchPath(input.branchId, 'keys')}">Show all keys</a>.
      </p>`;

/** "As of", as on the usage page: the keys page reads the same rollups (docs/console.md "Figures"). */
const freshness = ({ asOf }: KeysPageInput): Html =>
  html`<p id="keys-freshness">
    <small>Last used and audit findings count calls as of ${time(asOf, 'never (no call counted yet)')}.</small>
  </p>`;

const keysTable = (input: KeysPageInput): Html =>
  html`${freshness(input)}
  ${cardsTable(
    'keys',
    keysCaption(input),
    [...KEY_COLUMNS, { header: 'Actions', cell: (key) => actionsCell(input.branchId, key) }],
    input.keys,
  )}`;

export const keysPage = (input: KeysPageInput): string =>
  layout({
    title: 'API keys',
    branchId: input.branchId,
    current: 'keys',
    body: html`<h1>API keys</h1>
      ${input.created ? createdPanel(input.created) : ''}
      ${input.notice ? html`<p role="status" class="notice">${input.notice}</p>` : ''}
      ${(input.warnings ?? []).map((warning) => html`<p role="status" class="warning">Warning: ${warning}</p>`)}
      ${input.alert ? html`<p role="alert" class="error">${input.alert}</p>` : ''} ${createPanel(input)}
      ${input.branchTotal > 0 ? filterForm(input) : ''}
      <div id="keys-results">${input.keys.length ? keysTable(input) : emptyState(input)} ${keysPager(input)}</div>`,
  });

export const confirmPage = (input: {
  branchId: string;
  key: KeyListing;
  action: KeyAction;
  csrf: string;
  /** Sent once only (a roll shows a new key's value: a re-sent form must not roll again). */
  formId?: string;
  /** Fields the action takes (a roll's grace period). */
  fields?: Html;
  /** Why the last try was refused (the form is kept). */
  error?: string | undefined;
}): string =>
  layout({
    title: `${input.action.label} key`,
    branchId: input.branchId,
    current: 'keys',
    body: html`<h1>${input.action.label} key “${input.key.name}”?</h1>
      <p>
        Key <code>${input.key.key_id}</code>, starting <code>${input.key.start}…</code>, scopes
        ${input.key.scopes.join(', ')}. Last used ${lastUse(input.key)}.
      </p>
      <p>${input.action.consequence}</p>
      ${input.error ? html`<p role="alert" class="error">${input.error}</p>` : ''}
      <form method="post" action="${keyPath(input.branchId, input.key.key_id, input.action.action)}">
        ${hidden(input.csrf, input.formId)} ${input.fields ?? ''}
        <button type="submit" ${input.action.danger ? html`class="danger"` : ''}>
          ${input.action.label} key “${input.key.name}”
        </button>
        <a href="${branchPath(input.branchId, 'keys')}">Cancel</a>
      </form>`,
  });

export const editPage = (
  branchId: string,
  key: KeyListing,
  csrf: string,
  values: KeyFormValues = keyFormValues(key),
  error?: FormError,
): string =>
  layout({
    title: 'Edit key',
    branchId,
    current: 'keys',
    body: html`<h1>Edit key “${key.name}”</h1>
      <p>Key <code>${key.key_id}</code>, starting <code>${key.start}…</code>. Changes apply from its next call.</p>
      ${keyForm({ action: keyPath(branchId, key.key_id, 'edit'), csrf, values, error, submit: `Save key “${key.name}”` })}
      <p><a href="${branchPath(branchId, 'keys')}">Cancel</a></p>`,
  });
