/**
 * One catalogue of error codes (shared/api/errors.ts) feeds the error factories, the OpenAPI error
 * responses and the README table: they must agree, so adding a code is an edit in one place.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ERROR_RESPONSES } from '../lib/openapi/document';
import { ERRORS_TABLE_END, ERRORS_TABLE_START, renderErrorsTable } from '../lib/openapi/errors-table';
import { ApiError, ERROR_CATALOGUE, ERROR_CODES } from '../shared/api/errors';
import { ERROR_EXAMPLES } from './support/errors';
import { OPENAPI_FILE } from './support/contract';

const ROOT = join(import.meta.dirname, '..');
const document = JSON.parse(readFileSync(OPENAPI_FILE, 'utf8'));
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');

describe('the error catalogue', () => {
  it.each(ERROR_CODES)('%s: its factory gives the catalogue status and exactly the catalogue headers', (code) => {
    const error = ERROR_EXAMPLES[code]();
    const entry = ERROR_CATALOGUE[code];
    expect(error).toMatchObject({ code, statusCode: entry.status, expose: true });
    expect(Object.keys(error.headers).sort()).toEqual([...entry.headers].sort());
    expect(error.message).toMatch(/\S/);
  });

  it('has a default message for every code (the factories may be more specific)', () => {
    for (const code of ERROR_CODES) expect(new ApiError(code).message).toBe(ERROR_CATALOGUE[code].message);
  });

  it.each(ERROR_CODES)('%s: the OpenAPI document lists it under its status, with its headers', (code) => {
    const { status, headers } = ERROR_CATALOGUE[code];
    const response = ERROR_RESPONSES.find((candidate) => candidate.codes.includes(code))!;
    expect(response.status).toBe(status);
    const documented = document.components.responses[response.name];
    const schema = document.components.schemas[`${response.name}Error`];
    expect(schema.properties.error.properties.code.enum).toContain(code);
    for (const header of headers) expect(Object.keys(documented.headers)).toContain(header);
    expect(documented.description).toContain(`\`${code}\``);
  });

  it('the OpenAPI document has no code the catalogue lacks', () => {
    const documented = Object.entries<any>(document.components.schemas)
      .filter(([name]) => name.endsWith('Error'))
      .flatMap(([, schema]) => schema.properties.error.properties.code.enum as string[]);
    expect(documented.sort()).toEqual([...ERROR_CODES].sort());
  });

  /** A markdown table as rows of trimmed cells, the separator row dropped (prettier pads cells). */
  const cells = (table: string) =>
    table
      .trim()
      .split('\n')
      .filter((line) => !/^\|[\s|:-]+\|$/.test(line))
      .map((line) =>
        line
          .slice(1, -1)
          .split(/(?<!\\)\|/)
          .map((cell) => cell.trim()),
      );

  it('the README table is the one generated from the catalogue (run `npm run openapi` if this fails)', () => {
    const start = readme.indexOf(ERRORS_TABLE_START) + ERRORS_TABLE_START.length;
    const section = readme.slice(start, readme.indexOf(ERRORS_TABLE_END));
    expect(cells(section)).toEqual(cells(renderErrorsTable()));
    expect(cells(section).map((row) => row[1])).toEqual(['code', ...ERROR_CODES.map((code) => `\`${code}\``)]);
  });
});
