/**
 * Writes docs/openapi.json from lib/openapi/document.ts (`npm run openapi`), formatted as prettier
 * would. With `--check`, writes nothing and exits 1 when the committed file is stale.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { format, resolveConfig } from 'prettier';
import { serializeOpenApiDocument } from '../lib/openapi/document';

export const OPENAPI_FILE = join(import.meta.dirname, '..', 'docs', 'openapi.json');

const main = async (): Promise<void> => {
  const options = (await resolveConfig(OPENAPI_FILE)) ?? {};
  const text = await format(serializeOpenApiDocument(), { ...options, filepath: OPENAPI_FILE });
  if (process.argv.includes('--check')) {
    const committed = await readFile(OPENAPI_FILE, 'utf8').catch(() => '');
    if (committed !== text) {
      console.error('docs/openapi.json is stale: run `npm run openapi` and commit it.');
      process.exit(1);
    }
    console.log('docs/openapi.json is up to date.');
    return;
  }
  await writeFile(OPENAPI_FILE, text);
  console.log(`Wrote docs/openapi.json`);
};

await main();
