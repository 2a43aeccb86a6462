/**
 * Routes of the per-key changes that show no key value: Edit (a form), Disable, Enable and
 * Revoke (confirmed on a page, then a POST). Each answers with a redirect to the keys page and a
 * notice, so a reload changes nothing; one whose entry is still pending answers with the keys page
 * and its warning (a re-sent form finds the change made and changes nothing).
 */
import { Hono } from 'hono';
import { OperatorError } from '../operator/errors';
import {
  disableKey,
  enableKey,
  revokeKey,
  updateKey,
  type KeyListing,
  type KeyOfBranch,
  type KeySettings,
  type PendingActivity,
} from '../operator/keys';
import {
  formError,
  formSettings,
  KEY_FORM_FIELDS,
  keyForm,
  keyFormValues,
  readKeyForm,
  type KeyFormValues,
} from './key-form';
import { branchPath, html, keyPath, layout, withQuery, type FormError } from './layout';
import { findKey, keysView, pendingWarnings } from './keys-routes';
import type { ConsoleContext, ConsoleEnv } from './session';

/** Back to the keys page, which says what was done to which key. */
const doneRedirect = (c: ConsoleContext, done: string) =>
  c.redirect(withQuery(branchPath(c.req.param('branch')!, 'keys'), { done, key: c.req.param('key')! }), 303);

/** The keys page after a change: redirected to, or shown at once with the warning of an entry still pending. */
const doneAnswer = async (c: ConsoleContext, done: string, pending: readonly PendingActivity[] | undefined) => {
  if (!pending) return doneRedirect(c, done);
  return c.html(await keysView(c, { done: { done, keyId: c.req.param('key')! }, ...pendingWarnings(pending) }));
};

const editPage = (branchId: string, key: KeyListing, csrf: string, values: KeyFormValues, error?: FormError) =>
  layout({
    title: 'Edit key',
    branchId,
    current: 'keys',
    body: html`<h1>Edit key “${key.name}”</h1>
      <p>Key <code>${key.key_id}</code>, starting <code>${key.start}…</code>. Changes apply from its next call.</p>
      ${keyForm({
        action: keyPath(branchId, key.key_id, 'edit'),
        csrf,
        values,
        error,
        submit: `Save key “${key.name}”`,
      })}
      <p><a href="${branchPath(branchId, 'keys')}">Cancel</a></p>`,
  });

/**
 * The settings the form changes: only fields whose value differs from the key's own (an expiry
 * with seconds, shown to the minute, is not moved by saving a new name). Empty clears.
 */
const changeOf = (current: KeyFormValues, sent: KeyFormValues): KeySettings =>
  formSettings(
    sent,
    KEY_FORM_FIELDS.filter((field) => JSON.stringify(current[field]) !== JSON.stringify(sent[field])),
  );

const keyOf = (c: ConsoleContext): KeyOfBranch => ({ branchId: c.req.param('branch')!, keyId: c.req.param('key')! });

/** A confirmed change of one key, then back to the list with its notice. */
const change =
  (done: string, run: (c: ConsoleContext) => Promise<{ pending?: PendingActivity[] }>) => async (c: ConsoleContext) =>
    doneAnswer(c, done, (await run(c)).pending);

/** Before the keys routes: `/keys/:key/edit` is a form, not a confirmation page. */
export const keyActionRoutes = new Hono<ConsoleEnv>()
  .get('/branches/:branch/keys/:key/edit', async (c) => {
    const key = await findKey(c);
    return c.html(editPage(c.req.param('branch'), key, c.var.session.csrf, keyFormValues(key)));
  })
  .post('/branches/:branch/keys/:key/edit', async (c) => {
    const key = await findKey(c);
    const sent = readKeyForm(c.var.form);
    try {
      const change = changeOf(keyFormValues(key), sent);
      if (Object.keys(change).length === 0) return doneRedirect(c, 'updated');
      const { pending } = await updateKey(c.var.ctx, { ...keyOf(c), ...change });
      return await doneAnswer(c, 'updated', pending);
    } catch (error) {
      if (!(error instanceof OperatorError) || error.code !== 'invalid_input') throw error;
      return c.html(editPage(key.branch_id, key, c.var.session.csrf, sent, formError(error)), 400);
    }
  })
  .post(
    '/branches/:branch/keys/:key/disable',
    change('disabled', (c) => disableKey(c.var.ctx, keyOf(c))),
  )
  .post(
    '/branches/:branch/keys/:key/enable',
    change('enabled', (c) => enableKey(c.var.ctx, keyOf(c))),
  )
  .post(
    '/branches/:branch/keys/:key/revoke',
    change('revoked', (c) => revokeKey(c.var.ctx, keyOf(c))),
  );
