/**
 * Routes of the per-key changes that show no key value: Edit (a form), Disable, Enable and
 * Revoke (confirmed on a page, then a POST). Each answers with a redirect to the keys page and a
 * notice, so a reload changes nothing; one whose entry is still pending answers with the keys page
 * and its warning (a re-sent form finds the change made and changes nothing).
 */
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
import { html } from './html';
import {
  formError,
  formSettings,
  KEY_FORM_FIELDS,
  keyForm,
  keyFormValues,
  readKeyForm,
  type KeyFormValues,
} from './key-form';
import { branchPath, keyPath, layout, withQuery, type FormError } from './layout';
import { findKey, keysView, pendingWarnings } from './keys-routes';
import { page, redirect, type ConsoleRoute, type RouteRequest } from './routes';

/** Back to the keys page, which says what was done to which key. */
export const doneRedirect = (branchId: string, keyId: string, done: string) =>
  redirect(withQuery(branchPath(branchId, 'keys'), { done, key: keyId }));

/** The keys page after a change: redirected to, or shown at once with the warning of an entry still pending. */
const doneAnswer = async (r: RouteRequest, done: string, pending: readonly PendingActivity[] | undefined) => {
  const { branch, key } = r.params;
  if (!pending) return doneRedirect(branch!, key!, done);
  return page(await keysView(r, { done: { done, keyId: key! }, ...pendingWarnings(pending) }));
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

const keyOf = (r: RouteRequest): KeyOfBranch => ({ branchId: r.params.branch!, keyId: r.params.key! });

const editFormRoute: ConsoleRoute = {
  method: 'GET',
  path: '/branches/:branch/keys/:key/edit',
  handle: async (r) => {
    const key = await findKey(r);
    return page(editPage(r.params.branch!, key, r.session.csrf, keyFormValues(key)));
  },
};

const editRoute: ConsoleRoute = {
  method: 'POST',
  path: '/branches/:branch/keys/:key/edit',
  handle: async (r) => {
    const key = await findKey(r);
    const sent = readKeyForm(r.form);
    try {
      const change = changeOf(keyFormValues(key), sent);
      if (Object.keys(change).length === 0) return doneRedirect(key.branch_id, key.key_id, 'updated');
      const { pending } = await updateKey(r.ctx, { ...keyOf(r), ...change });
      return await doneAnswer(r, 'updated', pending);
    } catch (error) {
      if (!(error instanceof OperatorError) || error.code !== 'invalid_input') throw error;
      return page(editPage(key.branch_id, key, r.session.csrf, sent, formError(error)), 400);
    }
  },
};

/** A confirmed change of one key, then back to the list with its notice. */
const changeRoute = (
  action: string,
  done: string,
  run: (r: RouteRequest) => Promise<{ pending?: PendingActivity[] }>,
): ConsoleRoute => ({
  method: 'POST',
  path: `/branches/:branch/keys/:key/${action}`,
  handle: async (r) => doneAnswer(r, done, (await run(r)).pending),
});

/** Before the keys routes: `/keys/:key/edit` is a form, not a confirmation page. */
export const KEY_ACTION_ROUTES: ConsoleRoute[] = [
  editFormRoute,
  editRoute,
  changeRoute('disable', 'disabled', (r) => disableKey(r.ctx, keyOf(r))),
  changeRoute('enable', 'enabled', (r) => enableKey(r.ctx, keyOf(r))),
  changeRoute('revoke', 'revoked', (r) => revokeKey(r.ctx, keyOf(r))),
];
