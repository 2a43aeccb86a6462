/**
 * Writes what is generated from the code: docs/openapi.json (lib/openapi/document.ts) and the
 * README's error table (lib/openapi/errors-table.ts), formatted as prettier would
 * (`npm run openapi`). With `--check`, writes nothing and exits 1 when either is stale.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { relative } from 'node:path';
import { format, resolveConfig } from 'prettier';
import { serializeOpenApiDocument } from '../lib/openapi/document';
import { renderErrorsTable, replaceErrorsTable } from '../lib/openapi/errors-table';
import { OPENAPI_FILE, PROJECT_ROOT, README_FILE } from '../lib/project-paths';

const formatted = async (text: string, file: string): Promise<string> =>
  format(text, { ...((await resolveConfig(file)) ?? {}), filepath: file });

const readme = await readFile(README_FILE, 'utf8');
const outputs = [
  { file: OPENAPI_FILE, text: await formatted(serializeOpenApiDocument(), OPENAPI_FILE) },
  { file: README_FILE, text: await formatted(replaceErrorsTable(readme, renderErrorsTable()), README_FILE) },
];
if (process.argv.includes('--check')) {
  const stale: string[] = [];
  for (const { file, text } of outputs)
    if ((await readFile(file, 'utf8').catch(() => '')) !== text) stale.push(relative(PROJECT_ROOT, file));
  if (stale.length > 0) {
    console.error(`${stale.join(' and ')} stale: run \`npm run openapi\` and commit.`);
    process.exit(1);
  }
  console.log('docs/openapi.json and the README error table are up to date.');
} else {
  for (const { file, text } of outputs) await writeFile(file, text);
  console.log('Wrote docs/openapi.json and the README error table');
}
