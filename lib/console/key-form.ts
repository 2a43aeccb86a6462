/**
 * The key form: Create key and Edit key share it (name, scopes, expiry, allowed IPs, rate limit).
 * An error the operator library refuses with is shown next to its field (`aria-invalid`,
 * described by the message) and that field takes the focus.
 */
import { SCOPES } from '../../shared/domain/schemas';
import type { ApiKeyRecord } from '../../shared/domain/key-record';
import { messageNaming, type OperatorError, type OperatorField } from '../operator/errors';
import { parseAllowedIps, parseIsoDate, parseRateLimitText, scopeList } from '../operator/input';
import type { KeySettings } from '../operator/keys';
import { fieldError, hidden, html, textField, type FormError, type Html } from './layout';
import { wallTimeToUtc } from './zone';

/** What the form holds, as typed: a refused form is shown again with these values. */
export interface KeyFormValues {
  name?: string;
  scopes?: string[];
  /** `datetime-local` text in UTC (typed in the reader's zone, converted by readKeyForm). */
  expires?: string;
  allowIps?: string;
  rateLimit?: string;
}

/** Every field of the form. */
export const KEY_FORM_FIELDS = ['name', 'scopes', 'expires', 'allowIps', 'rateLimit'] as const;

/** The form's fields read from a POST body. */
export const readKeyForm = (form: URLSearchParams): KeyFormValues => ({
  name: form.get('name') ?? '',
  scopes: form.getAll('scopes'),
  expires: wallTimeToUtc(form.get('expires') ?? '', form.get('zone')),
  allowIps: form.get('allow_ips') ?? '',
  rateLimit: form.get('rate_limit') ?? '',
});

/** An ISO time as the `datetime-local` field shows it (UTC, to the minute). */
export const expiresValue = (iso: string | undefined): string => (iso ? iso.slice(0, 16) : '');

/** A key's settings as the form shows them (Edit key starts from these). */
export const keyFormValues = (key: ApiKeyRecord): KeyFormValues => ({
  name: key.name,
  scopes: [...key.scopes],
  expires: expiresValue(key.expires_at),
  allowIps: key.allowed_ips?.join(', ') ?? '',
  rateLimit: key.rate_limit ?? '',
});

/** The operator library's field (lib/operator/errors.ts) → this form's input name and label. */
const FORM_FIELDS: Partial<Record<OperatorField, { input: string; label: string }>> = {
  name: { input: 'name', label: 'Name' },
  scopes: { input: 'scopes', label: 'Scopes' },
  expires_at: { input: 'expires', label: 'Expires' },
  allowed_ips: { input: 'allow_ips', label: 'Allowed IPs' },
  rate_limit: { input: 'rate_limit', label: 'Rate limit' },
};

/** The library's refusal as a form error, by its code and field (never its text), named by the field's label. */
export const formError = (error: OperatorError): FormError => {
  const field = error.code === 'invalid_input' && error.field ? FORM_FIELDS[error.field] : undefined;
  const message = messageNaming(error, (name) => FORM_FIELDS[name]?.label);
  return field ? { field: field.input, message } : { message };
};

/** The text fields of the form as settings: empty is `null` (unset), except for the name, which stays as typed. */
const textSettings = {
  name: (value: string): KeySettings => ({ name: value }),
  scopes: (values: readonly string[]): KeySettings => ({ scopes: scopeList(values) }),
  // UTC by now: readKeyForm converted it from the zone the page sent (or took it as UTC).
  expires: (value: string): KeySettings => ({
    expiresAt: value.trim() ? parseIsoDate(value.trim(), 'expires_at') : null,
  }),
  allowIps: (value: string): KeySettings => ({ allowedIps: value.trim() ? parseAllowedIps(value) : null }),
  rateLimit: (value: string): KeySettings => ({ rateLimit: value.trim() ? parseRateLimitText(value.trim()) : null }),
};

/**
 * The settings of the fields in `fields`, parsed (an OperatorError names the first bad one). An
 * empty optional field is `null`: unset on an edit, left out on a create.
 */
export const formSettings = (values: KeyFormValues, fields: readonly (keyof KeyFormValues)[]): KeySettings =>
  Object.assign(
    {},
    ...fields.map((field) =>
      field === 'scopes' ? textSettings.scopes(values.scopes ?? []) : textSettings[field](values[field] ?? ''),
    ),
  ) as KeySettings;

const scopesField = (values: KeyFormValues, error: FormError | undefined): Html => {
  const scopes = new Set(values.scopes ?? []);
  const { attributes, message } = fieldError('key-scopes', 'scopes', error);
  return html`<fieldset>
    <legend>Scopes</legend>
    ${SCOPES.map(
      (scope, i) =>
        html`<label
          ><input
            ${i === 0 ? html`id="key-scopes"` : ''}
            type="checkbox"
            name="scopes"
            value="${scope}"
            ${scopes.has(scope) ? html`checked` : ''}
            ${i === 0 ? attributes : error?.field === 'scopes' ? html`aria-invalid="true"` : ''}
          />
          ${scope}</label
        >`,
    )}
    ${message}
  </fieldset>`;
};

/** The fields after the scopes, in order. */
const LIMIT_FIELDS: {
  id: string;
  name: string;
  label: Html;
  value: 'expires' | 'allowIps' | 'rateLimit';
  extra: Html;
}[] = [
  {
    id: 'key-expires',
    name: 'expires',
    // assets/console.js names the reader's zone here and sends it with the form.
    label: html`Expires (<span data-zone>UTC</span>; empty: never)`,
    value: 'expires',
    extra: html`type="datetime-local" data-utc`,
  },
  {
    id: 'key-allow-ips',
    name: 'allow_ips',
    label: html`Allowed IPs (addresses or CIDR blocks, comma-separated; empty: any)`,
    value: 'allowIps',
    extra: html`placeholder="203.0.113.0/24, 2001:db8::1"`,
  },
  {
    id: 'key-rate-limit',
    name: 'rate_limit',
    label: html`Rate limit (N/s, N/min or N/h; empty: the default)`,
    value: 'rateLimit',
    extra: html`placeholder="20/s"`,
  },
];

export const keyForm = (input: {
  action: string;
  csrf: string;
  formId?: string;
  values: KeyFormValues;
  error: FormError | undefined;
  submit: string;
}): Html => {
  const { values, error } = input;
  return html`${error && !error.field ? html`<p role="alert" class="error">${error.message}</p>` : ''}
    <form method="post" action="${input.action}" autocomplete="off" novalidate>
      ${hidden(input.csrf, input.formId ? { _form: input.formId } : {})}
      ${textField({
        id: 'key-name',
        name: 'name',
        label: 'Name',
        value: values.name ?? '',
        error,
        extra: html`maxlength="200" placeholder="e.g. reporting job"`,
      })}
      ${scopesField(values, error)}
      ${LIMIT_FIELDS.map((field) =>
        textField({
          id: field.id,
          name: field.name,
          label: field.label,
          value: values[field.value] ?? '',
          error,
          extra: field.extra,
        }),
      )}
      <button type="submit">${input.submit}</button>
    </form>`;
};
