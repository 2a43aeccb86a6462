/**
 * The README's error table, generated from the catalogue (shared/api/errors.ts) like the OpenAPI
 * error responses. `npm run openapi` writes it between the markers; a test fails when it is stale.
 */
import { ERROR_CATALOGUE, ERROR_CODES } from '../../shared/api/errors';

export const ERRORS_TABLE_START = '<!-- error table: generated from shared/api/errors.ts by `npm run openapi` -->';
export const ERRORS_TABLE_END = '<!-- end of error table -->';

/** The table as markdown (before formatting), in catalogue order. */
export const renderErrorsTable = (): string =>
  [
    '| Status | code | when | headers |',
    '| --- | --- | --- | --- |',
    ...ERROR_CODES.map((code) => {
      const { status, when, headers } = ERROR_CATALOGUE[code];
      const extra = headers.length > 0 ? headers.map((name) => `\`${name}\``).join(', ') : '';
      return `| ${status} | \`${code}\` | ${when.replace(/\|/g, '\\|')} | ${extra} |`;
    }),
  ].join('\n');

/** Replaces what stands between the markers of `document` with `table`. */
export const replaceErrorsTable = (document: string, table: string): string => {
  const start = document.indexOf(ERRORS_TABLE_START);
  const end = document.indexOf(ERRORS_TABLE_END);
  if (start === -1 || end < start) throw new Error('README.md has no error table markers');
  return `${document.slice(0, start + ERRORS_TABLE_START.length)}\n\n${table}\n\n${document.slice(end)}`;
};
