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

/** What the form holds, as typed, by input name: a refused form is shown again with these values. */
export interface KeyFormValues {
  name?: string;
  scopes?: string[];
  /** `datetime-local` text in UTC (typed in the reader's zone, converted by readKeyForm). */
  expires?: string;
  allow_ips?: string;
  rate_limit?: string;
}

interface TextField {
  input: 'name' | 'expires' | 'allow_ips' | 'rate_limit';
  /** The operator library's field (lib/operator/errors.ts), and its name in this form's messages. */
  field: OperatorField;
  label: string;
  hint?: Html;
  extra: Html;
  /** The typed text as a setting: empty is `null` (unset), except for the name, which stays as typed. */
  setting(value: string): KeySettings;
}

/** The text fields, in order; the scopes come after the name. */
const TEXT_FIELDS: TextField[] = [
  {
    input: 'name',
    field: 'name',
    label: 'Name',
    extra: html`maxlength="200" placeholder="e.g. reporting job"`,
    setting: (name) => ({ name }),
  },
  {
    input: 'expires',
    field: 'expires_at',
    label: 'Expires',
    // assets/console.js names the reader's zone here and sends it with the form.
    hint: html` (<span data-zone>UTC</span>; empty: never)`,
    extra: html`type="datetime-local" data-utc`,
    // UTC by now: readKeyForm converted it from the zone the page sent (or took it as UTC).
    setting: (value) => ({ expiresAt: value.trim() ? parseIsoDate(value.trim(), 'expires_at') : null }),
  },
  {
    input: 'allow_ips',
    field: 'allowed_ips',
    label: 'Allowed IPs',
    hint: html` (addresses or CIDR blocks, comma-separated; empty: any)`,
    extra: html`placeholder="203.0.113.0/24, 2001:db8::1"`,
    setting: (value) => ({ allowedIps: value.trim() ? parseAllowedIps(value) : null }),
  },
  {
    input: 'rate_limit',
    field: 'rate_limit',
    label: 'Rate limit',
    hint: html` (N/s, N/min or N/h; empty: the default)`,
    extra: html`placeholder="20/s"`,
    setting: (value) => ({ rateLimit: value.trim() ? parseRateLimitText(value.trim()) : null }),
  },
];

/** Every field of the form. */
export const KEY_FORM_FIELDS = ['name', 'scopes', 'expires', 'allow_ips', 'rate_limit'] as const;

/** The form's fields read from a POST body. */
export const readKeyForm = (form: URLSearchParams): KeyFormValues => ({
  ...Object.fromEntries(TEXT_FIELDS.map(({ input }) => [input, form.get(input) ?? ''])),
  scopes: form.getAll('scopes'),
  expires: wallTimeToUtc(form.get('expires') ?? '', form.get('zone')),
});

/** A key's settings as the form shows them (Edit key starts from these); an expiry in UTC, to the minute. */
export const keyFormValues = (key: ApiKeyRecord): KeyFormValues => ({
  name: key.name,
  scopes: [...key.scopes],
  expires: key.expires_at?.slice(0, 16) ?? '',
  allow_ips: key.allowed_ips?.join(', ') ?? '',
  rate_limit: key.rate_limit ?? '',
});

/** The library's refusal as a form error, by its code and field (never its text), named by the field's label. */
export const formError = (error: OperatorError): FormError => {
  const fieldOf = (name: OperatorField) =>
    name === 'scopes' ? { input: 'scopes', label: 'Scopes' } : TEXT_FIELDS.find((f) => f.field === name);
  const field = error.code === 'invalid_input' && error.field ? fieldOf(error.field) : undefined;
  const message = messageNaming(error, (name) => fieldOf(name)?.label);
  return field ? { field: field.input, message } : { message };
};

/**
 * The settings of the fields in `fields`, parsed (an OperatorError names the first bad one). An
 * empty optional field is `null`: unset on an edit, left out on a create.
 */
export const formSettings = (values: KeyFormValues, fields: readonly (keyof KeyFormValues)[]): KeySettings =>
  Object.assign(
    {},
    ...fields.map((input) =>
      input === 'scopes'
        ? { scopes: scopeList(values.scopes ?? []) }
        : TEXT_FIELDS.find((f) => f.input === input)!.setting(values[input] ?? ''),
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

const textInput = (field: TextField, values: KeyFormValues, error: FormError | undefined): Html =>
  textField({
    id: `key-${field.input.replace('_', '-')}`,
    name: field.input,
    label: html`${field.label}${field.hint ?? ''}`,
    value: values[field.input] ?? '',
    error,
    extra: field.extra,
  });

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
      ${hidden(input.csrf, input.formId)} ${textInput(TEXT_FIELDS[0]!, values, error)} ${scopesField(values, error)}
      ${TEXT_FIELDS.slice(1).map((field) => textInput(field, values, error))}
      <button type="submit">${input.submit}</button>
    </form>`;
};
