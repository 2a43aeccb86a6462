/**
 * Routes of the "API keys" page: the list (search, status filter, pages), Create key, and each
 * key's actions, a confirmation page (GET) and the change (POST).
 */
import { OperatorError } from '../operator/errors';
import { DEFAULT_GRACE, parseGrace } from '../operator/input';
import { auditOf, lastUseOf, rollupUsageFacts, type KeyAudit } from '../operator/key-audit';
import { isWholeValue, keyIdOfValue, matchesKey } from '../operator/key-search';
import { createKey, listKeys, pendingNotice, rollKey, type KeyListing, type PendingActivity } from '../operator/keys';
import { apiKeyStart } from '../../shared/domain/api-key';
import { keyState } from '../../shared/domain/key-state';
import { Hono } from 'hono';
import { formError, formSettings, KEY_FORM_FIELDS, readKeyForm } from './key-form';
import {
  confirmPage,
  DONE_NOTICES,
  KEY_ACTIONS,
  KEY_STATUSES,
  keysPage,
  KEYS_PAGE_SIZE,
  type KeyFilters,
  type KeysPageInput,
} from './keys-page';
import { branchPath, html, withQuery, type Html } from './layout';
import { notFound, queryValue, Refusal } from './refusals';
import type { ConsoleContext, ConsoleEnv } from './session';

type Extra = Partial<
  Omit<KeysPageInput, 'branchId' | 'keys' | 'total' | 'branchTotal' | 'asOf' | 'csrf' | 'formId'>
> & {
  done?: { done: string; keyId: string } | undefined;
};

/** The warnings of the entries an action left pending, for the keys page. */
export const pendingWarnings = (pending: readonly PendingActivity[] | undefined) =>
  pending ? { warnings: pending.map(pendingNotice) } : {};

/** What a change just did (its redirect's `done` and `key`), for the notice. */
const doneOf = (c: ConsoleContext) => {
  const done = queryValue(c, 'done');
  const keyId = queryValue(c, 'key');
  return done !== undefined && keyId !== undefined && Object.hasOwn(DONE_NOTICES, done) ? { done, keyId } : undefined;
};

const readFilters = (c: ConsoleContext): KeyFilters => {
  const q = queryValue(c, 'q');
  const status = queryValue(c, 'status');
  if (status !== undefined && !(KEY_STATUSES as readonly string[]).includes(status)) {
    throw new Refusal(400, 'Bad request', `No key status "${status}".`);
  }
  return {
    ...(q ? { q } : {}),
    ...(status ? { status: status as KeyFilters['status'] } : {}),
    ...(queryValue(c, 'value') === 'none' ? { noValue: true } : {}),
  };
};

/**
 * Keys audited at once: a key with calls costs one Query of its rollups, and a page of 100 fired
 * together would be a burst against a real table.
 */
const AUDIT_CONCURRENCY = 10;

/** This page's audit, from the rollups (docs/console.md "Figures"): never a raw usage record. */
const auditInChunks = async (c: ConsoleContext, keys: readonly KeyListing[], now: Date) => {
  const audits: KeyAudit[] = [];
  for (let i = 0; i < keys.length; i += AUDIT_CONCURRENCY) {
    const chunk = keys.slice(i, i + AUDIT_CONCURRENCY);
    audits.push(...(await auditOf(c.var.ctx, chunk, now, (key) => rollupUsageFacts(c.var.ctx, key, now))));
  }
  return audits;
};

/** The keys page: the keys the filters select, a page of them, with this page's audit findings. */
export const keysView = async (c: ConsoleContext, extra: Extra = {}): Promise<string> => {
  const branchId = c.req.param('branch')!;
  const filters = extra.filters ?? {};
  const page = extra.page ?? 1;
  const now = new Date();
  const [all, asOf] = await Promise.all([listKeys(c.var.ctx, branchId, now), c.var.ctx.rollups.progress()]);
  const selected = all.filter((key) => matchesKey(key, { ...filters, search: filters.q }));
  const keys = selected.slice((page - 1) * KEYS_PAGE_SIZE, page * KEYS_PAGE_SIZE);
  // The audit of this page's active keys: the rules of `keys audit` (lib/operator/key-audit.ts).
  const audits = await auditInChunks(c, keys, now);
  const findings = new Map(audits.map((audit) => [audit.key_id, audit.findings]));
  // Only a key of this branch is named in a notice: a crafted link cannot make the page say anything else.
  const doneKey = extra.done && all.find((key) => key.key_id === extra.done!.keyId);
  const { done, ...rest } = extra;
  return keysPage({
    ...rest,
    ...(done && doneKey ? { notice: `Key “${doneKey.name}” (${doneKey.key_id}) ${DONE_NOTICES[done.done]}` } : {}),
    branchId,
    keys: keys.map((key) => ({ ...key, ...(findings.has(key.key_id) ? { findings: findings.get(key.key_id)! } : {}) })),
    total: selected.length,
    branchTotal: all.length,
    asOf: asOf ?? null,
    filters,
    page,
    csrf: c.var.session.csrf,
    formId: c.var.sessions.issueForm(c.var.session),
  });
};

/** The key of this branch named in the path, or a 404. */
export const findKey = async (c: ConsoleContext) => {
  const branch = c.req.param('branch');
  const keyId = c.req.param('key')!;
  const [record, uses] = await Promise.all([c.var.ctx.keys.getById(keyId), c.var.ctx.rollups.lastUsed(branch!)]);
  if (!record || record.branch_id !== branch) throw notFound(`Branch ${branch} has no key ${keyId}.`);
  return { ...record, status: keyState(record, new Date()), ...lastUseOf(record, uses.get(keyId)) };
};

/** A form that shows a key value must be sent once: a reload re-sends it, and must not repeat it. */
const sentTwice = async (c: ConsoleContext, what: string) =>
  c.var.sessions.consumeForm(c.var.session, c.var.form.get('_form') ?? undefined)
    ? undefined
    : c.html(await keysView(c, { alert: `This form was already sent, so ${what}.` }), 409);

/** The grace-period choice of a roll's confirmation page (lib/operator/input.ts parseGrace reads it). */
export const GRACE_CHOICES = [
  { value: '0', label: 'none: the old key stops now' },
  { value: '15m', label: '15 minutes' },
  { value: '1h', label: '1 hour' },
  { value: '24h', label: '24 hours' },
  { value: '7d', label: '7 days' },
] as const;

export const graceField = (): Html =>
  html`<label for="grace">Grace period</label>
    <select id="grace" name="grace">
      ${GRACE_CHOICES.map(
        (c) => html`<option value="${c.value}" ${c.value === DEFAULT_GRACE ? html`selected` : ''}>${c.label}</option>`,
      )}
    </select>`;

const CONSEQUENCES: Record<string, string> = {
  roll:
    'A new key with the same scopes, rate limit, allowed IPs and expiry is created and shown once. ' +
    'This key keeps working until the grace period ends, then it is refused.',
  revoke: 'Calls with this key are refused from the next request on. This cannot be undone.',
  disable:
    'Calls with this key answer 401 disabled_api_key from the next request on, until it is enabled again. ' +
    'Nothing else about the key changes.',
  enable: 'Calls with this key are accepted again from the next request on.',
};

/** A roll's confirmation: a grace period to choose and a form sent once (it shows the new key). */
const rollPage = (c: ConsoleContext, key: KeyListing, error?: string) =>
  confirmPage({
    branchId: c.req.param('branch')!,
    key,
    action: KEY_ACTIONS.find((a) => a.action === 'roll')!,
    csrf: c.var.session.csrf,
    consequence: CONSEQUENCES.roll!,
    formId: c.var.sessions.issueForm(c.var.session),
    fields: graceField(),
    ...(error ? { error } : {}),
  });

/** The "API keys" page, its confirmation pages, Create key and Roll (the other changes: key-action-routes.ts). */
export const keyRoutes = new Hono<ConsoleEnv>()
  .get('/branches/:branch/keys', async (c) => {
    const pageNumber = Number(c.req.query('page') ?? '1');
    if (!Number.isSafeInteger(pageNumber) || pageNumber < 1)
      throw new Refusal(400, 'Bad request', 'No such page of keys.');
    const filters = readFilters(c);
    // A whole value leaves the address at once: the search goes on by the id it hashed to.
    if (filters.q !== undefined && isWholeValue(filters.q)) {
      const keyId = await keyIdOfValue(c.var.ctx, c.req.param('branch'), filters.q);
      const query = keyId ? { q: keyId } : { q: apiKeyStart(filters.q), value: 'none' };
      return c.redirect(
        withQuery(branchPath(c.req.param('branch'), 'keys'), { ...query, status: filters.status }),
        303,
      );
    }
    return c.html(await keysView(c, { filters, page: pageNumber, done: doneOf(c) }));
  })
  .get('/branches/:branch/keys/:key/:action', async (c) => {
    const action = KEY_ACTIONS.find((a) => a.action === c.req.param('action'));
    if (!action) throw notFound();
    const key = await findKey(c);
    if (!action.applies(key)) {
      const rolled = key.rolled_to ? ` and rolled to ${key.rolled_to}` : '';
      throw new Refusal(
        409,
        'Nothing to do',
        `Key ${key.key_id} is ${key.status}${rolled}: it cannot be ${action.done}.`,
      );
    }
    if (action.action === 'roll') return c.html(rollPage(c, key));
    return c.html(
      confirmPage({
        branchId: c.req.param('branch'),
        key,
        action,
        csrf: c.var.session.csrf,
        consequence: CONSEQUENCES[action.action] ?? '',
      }),
    );
  })
  .post('/branches/:branch/keys', async (c) => {
    const values = readKeyForm(c.var.form);
    const again = await sentTwice(c, 'no new key was created. A key value is shown only once');
    if (again) return again;
    try {
      const { name, scopes = [], expiresAt, allowedIps, rateLimit } = formSettings(values, KEY_FORM_FIELDS);
      const { key, record, pending } = await createKey(c.var.ctx, {
        branchId: c.req.param('branch'),
        scopes,
        // An empty name gets the default one; an empty optional field is no setting.
        ...(name?.trim() ? { name } : {}),
        ...(expiresAt ? { expiresAt } : {}),
        ...(allowedIps ? { allowedIps } : {}),
        ...(rateLimit ? { rateLimit } : {}),
      });
      // 200 with the value in the body, never a redirect: the value must not reach a URL.
      const created = { key, name: record.name, keyId: record.key_id };
      return c.html(await keysView(c, { created, ...pendingWarnings(pending) }));
    } catch (error) {
      if (!(error instanceof OperatorError)) throw error;
      return c.html(await keysView(c, { error: formError(error), form: values }), 400);
    }
  })
  .post('/branches/:branch/keys/:key/roll', async (c) => {
    const key = await findKey(c);
    const grace = c.var.form.get('grace');
    // Checked before the form is used up: a wrong grace keeps the form for another try.
    if (!GRACE_CHOICES.some((choice) => choice.value === grace)) {
      const choices = GRACE_CHOICES.map((choice) => choice.value).join(', ');
      return c.html(rollPage(c, key, `Choose a grace period: one of ${choices}.`), 400);
    }
    const again = await sentTwice(c, 'the key was not rolled again');
    if (again) return again;
    try {
      const { key, record, previous, pending } = await rollKey(c.var.ctx, {
        branchId: c.req.param('branch'),
        keyId: c.req.param('key'),
        graceMs: parseGrace(grace ?? ''),
      });
      const note = `Key ${previous.key_id} keeps working until ${previous.expires_at}.`;
      // 200 with the value in the body, never a redirect: the value must not reach a URL.
      const created = { key, name: record.name, keyId: record.key_id, note };
      return c.html(await keysView(c, { created, ...pendingWarnings(pending) }));
    } catch (error) {
      if (!(error instanceof OperatorError)) throw error;
      return c.html(await keysView(c, { alert: error.message }), 409);
    }
  });
