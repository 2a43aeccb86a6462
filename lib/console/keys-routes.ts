/**
 * Routes of the "API keys" page: the list (search, status filter, pages), Create key, and each
 * key's actions, a page (a form, or a confirmation) and the change (a POST). Create and Roll
 * answer with the new value in the page; Edit, Disable, Enable and Revoke with a redirect to the
 * keys page and a notice, so a reload changes nothing; one whose entry is still pending answers
 * with the keys page and its warning (a re-sent form finds the change made and changes nothing).
 */
import { Hono } from 'hono';
import { apiKeyStart } from '../../shared/domain/api-key';
import type { ApiKeyRecord } from '../../shared/domain/key-record';
import { KEY_STATES, keyState } from '../../shared/domain/key-state';
import type { OperatorContext } from '../operator/context';
import { OperatorError } from '../operator/errors';
import { DEFAULT_GRACE, parseGrace } from '../operator/input';
import { auditOf, lastUseOf } from '../operator/key-audit';
import { isWholeValue, keyIdOfValue, matchesKey } from '../operator/key-search';
import {
  createKey,
  disableKey,
  enableKey,
  listKeys,
  pendingNotice,
  revokeKey,
  rollKey,
  updateKey,
  type KeyListing,
  type KeyOfBranch,
  type PendingActivity,
} from '../operator/keys';
import { formError, formSettings, KEY_FORM_FIELDS, keyFormValues, readKeyForm } from './key-form';
import {
  confirmPage,
  DONE_NOTICES,
  editPage,
  KEY_ACTIONS,
  keysPage,
  KEYS_PAGE_SIZE,
  type KeyFilters,
  type KeysPageInput,
} from './keys-page';
import { branchPath, select, withQuery } from './layout';
import { notFound, queryChoice, queryValue, Refusal } from './refusals';
import type { ConsoleContext, ConsoleEnv } from './session';

type Extra = Partial<
  Omit<KeysPageInput, 'branchId' | 'keys' | 'total' | 'branchTotal' | 'asOf' | 'csrf' | 'formId'>
> & {
  done?: { done: string; keyId: string } | undefined;
  pending?: readonly PendingActivity[] | undefined;
};

/** What a change just did (its redirect's `done` and `key`), for the notice. */
const doneOf = (c: ConsoleContext) => {
  const done = queryValue(c, 'done');
  const keyId = queryValue(c, 'key');
  return done !== undefined && keyId !== undefined && Object.hasOwn(DONE_NOTICES, done) ? { done, keyId } : undefined;
};

const readFilters = (c: ConsoleContext): KeyFilters => ({
  q: queryValue(c, 'q'),
  status: queryChoice(c, 'status', KEY_STATES, (status) => `No key status "${status}".`),
  noValue: queryValue(c, 'value') === 'none',
});

/** The keys page: the keys the filters select, a page of them, with this page's audit findings. */
const keysView = async (c: ConsoleContext, { done, pending, ...extra }: Extra = {}): Promise<string> => {
  const branchId = c.req.param('branch')!;
  const filters = extra.filters ?? {};
  const page = extra.page ?? 1;
  const now = new Date();
  const [all, asOf] = await Promise.all([listKeys(c.var.ctx, branchId, now), c.var.ctx.rollups.progress()]);
  const selected = all.filter((key) => matchesKey(key, { ...filters, search: filters.q }));
  const keys = selected.slice((page - 1) * KEYS_PAGE_SIZE, page * KEYS_PAGE_SIZE);
  // The audit of this page's active keys, from the rollups (docs/console.md "Figures"), never a
  // raw usage record: the rules of `keys audit` (lib/operator/key-audit.ts).
  const audits = await auditOf(c.var.ctx, keys, now);
  const findings = new Map(audits.map((audit) => [audit.key_id, audit.findings]));
  // Only a key of this branch is named in a notice: a crafted link cannot make the page say anything else.
  const doneKey = done && all.find((key) => key.key_id === done.keyId);
  return keysPage({
    ...extra,
    ...(done && doneKey ? { notice: `Key “${doneKey.name}” (${doneKey.key_id}) ${DONE_NOTICES[done.done]}` } : {}),
    ...(pending ? { warnings: pending.map(pendingNotice) } : {}),
    branchId,
    keys: keys.map((key) => ({ ...key, findings: findings.get(key.key_id) })),
    total: selected.length,
    branchTotal: all.length,
    asOf: asOf ?? null,
    filters,
    page,
    csrf: c.var.session.csrf,
    formId: c.var.sessions.issueForm(c.var.session),
  });
};

const keyOf = (c: ConsoleContext): KeyOfBranch => ({ branchId: c.req.param('branch')!, keyId: c.req.param('key')! });

/** The key of this branch named in the path, or a 404. */
const findKey = async (c: ConsoleContext) => {
  const { branchId, keyId } = keyOf(c);
  const [record, uses] = await Promise.all([c.var.ctx.keys.getById(keyId), c.var.ctx.rollups.lastUsed(branchId)]);
  if (!record || record.branch_id !== branchId) throw notFound(`Branch ${branchId} has no key ${keyId}.`);
  return { ...record, status: keyState(record, new Date()), ...lastUseOf(record, uses.get(keyId)) };
};

/** An OperatorError shown on the page `view` makes of it, with `status`; any other error is app.onError's. */
const refusedWith =
  (c: ConsoleContext, status: 400 | 409, view: (error: OperatorError) => Promise<string> | string) =>
  async (error: unknown) => {
    if (!(error instanceof OperatorError)) throw error;
    return c.html(await view(error), status);
  };

/**
 * A change that shows a new key's value (Create, Roll): 200 with the value in the body, never a
 * redirect, so it reaches no URL; and its form is sent once: a reload re-sends it, and must not
 * repeat it.
 */
const newKeyAnswer = async (
  c: ConsoleContext,
  notAgain: string,
  make: () => Promise<{ key: string; record: KeyListing | ApiKeyRecord; pending?: PendingActivity[]; note?: string }>,
) => {
  if (!c.var.sessions.consumeForm(c.var.session, c.var.form.get('_form') ?? undefined))
    return c.html(await keysView(c, { alert: `This form was already sent, so ${notAgain}.` }), 409);
  const { key, record, pending, note } = await make();
  return c.html(await keysView(c, { created: { key, name: record.name, keyId: record.key_id, note }, pending }));
};

/** The grace-period choice of a roll's confirmation page (lib/operator/input.ts parseGrace reads it). */
export const GRACE_CHOICES = [
  ['0', 'none: the old key stops now'],
  ['15m', '15 minutes'],
  ['1h', '1 hour'],
  ['24h', '24 hours'],
  ['7d', '7 days'],
] as const;

export const graceField = () => select('Grace period', 'grace', GRACE_CHOICES, DEFAULT_GRACE, 'grace');

/** A roll's confirmation: a grace period to choose and a form sent once (it shows the new key). */
const rollPage = (c: ConsoleContext, key: KeyListing, error?: string) =>
  confirmPage({
    branchId: c.req.param('branch')!,
    key,
    action: KEY_ACTIONS.find((a) => a.action === 'roll')!,
    csrf: c.var.session.csrf,
    formId: c.var.sessions.issueForm(c.var.session),
    fields: graceField(),
    error,
  });

/** Back to the keys page, which says what was done to which key; at once, with the warning of an entry still pending. */
const doneAnswer = async (c: ConsoleContext, done: string, pending?: readonly PendingActivity[]) =>
  pending
    ? c.html(await keysView(c, { done: { done, keyId: c.req.param('key')! }, pending }))
    : c.redirect(withQuery(branchPath(c.req.param('branch')!, 'keys'), { done, key: c.req.param('key')! }), 303);

/** A confirmed change of one key, then back to the list with its notice. */
const change =
  (done: string, run: (ctx: OperatorContext, key: KeyOfBranch) => Promise<{ pending?: PendingActivity[] }>) =>
  async (c: ConsoleContext) =>
    doneAnswer(c, done, (await run(c.var.ctx, keyOf(c))).pending);

export const keyRoutes = new Hono<ConsoleEnv>()
  .get('/branches/:branch/keys', async (c) => {
    const page = Number(c.req.query('page') ?? '1');
    if (!Number.isSafeInteger(page) || page < 1) throw new Refusal(400, 'Bad request', 'No such page of keys.');
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
    return c.html(await keysView(c, { filters, page, done: doneOf(c) }));
  })
  .post('/branches/:branch/keys', async (c) => {
    const values = readKeyForm(c.var.form);
    const make = () => {
      const { name, scopes = [], ...settings } = formSettings(values, KEY_FORM_FIELDS);
      // An empty name gets the default one; an empty optional field is no setting.
      const named = name?.trim() ? name : undefined;
      return createKey(c.var.ctx, { ...settings, branchId: c.req.param('branch'), scopes, name: named });
    };
    return newKeyAnswer(c, 'no new key was created. A key value is shown only once', make).catch(
      refusedWith(c, 400, (error) => keysView(c, { error: formError(error), form: values })),
    );
  })
  // `/keys/:key/edit` is a form, before `/keys/:key/:action`, a confirmation page.
  .get('/branches/:branch/keys/:key/edit', async (c) =>
    c.html(editPage(c.req.param('branch'), await findKey(c), c.var.session.csrf)),
  )
  .post('/branches/:branch/keys/:key/edit', async (c) => {
    const key = await findKey(c);
    const sent = readKeyForm(c.var.form);
    const current = keyFormValues(key);
    try {
      // Only the fields whose value differs from the key's own (an expiry with seconds, shown to
      // the minute, is not moved by saving a new name). Empty clears.
      const changed = KEY_FORM_FIELDS.filter((field) => JSON.stringify(current[field]) !== JSON.stringify(sent[field]));
      if (changed.length === 0) return await doneAnswer(c, 'updated');
      const { pending } = await updateKey(c.var.ctx, { ...keyOf(c), ...formSettings(sent, changed) });
      return await doneAnswer(c, 'updated', pending);
    } catch (error) {
      if (!(error instanceof OperatorError) || error.code !== 'invalid_input') throw error;
      return c.html(editPage(key.branch_id, key, c.var.session.csrf, sent, formError(error)), 400);
    }
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
    return c.html(confirmPage({ branchId: c.req.param('branch'), key, action, csrf: c.var.session.csrf }));
  })
  .post('/branches/:branch/keys/:key/roll', async (c) => {
    const key = await findKey(c);
    const grace = c.var.form.get('grace');
    // Checked before the form is used up: a wrong grace keeps the form for another try.
    if (!GRACE_CHOICES.some(([value]) => value === grace)) {
      const choices = GRACE_CHOICES.map(([value]) => value).join(', ');
      return c.html(rollPage(c, key, `Choose a grace period: one of ${choices}.`), 400);
    }
    const make = async () => {
      const rolled = await rollKey(c.var.ctx, { ...keyOf(c), graceMs: parseGrace(grace ?? '') });
      return { ...rolled, note: `Key ${rolled.previous.key_id} keeps working until ${rolled.previous.expires_at}.` };
    };
    return newKeyAnswer(c, 'the key was not rolled again', make).catch(
      refusedWith(c, 409, (error) => keysView(c, { alert: error.message })),
    );
  })
  .post('/branches/:branch/keys/:key/disable', change('disabled', disableKey))
  .post('/branches/:branch/keys/:key/enable', change('enabled', enableKey))
  .post('/branches/:branch/keys/:key/revoke', change('revoked', revokeKey));
