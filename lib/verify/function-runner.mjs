// Runs one bundled function in this process, as Lambda would: the handler module is imported once
// from the asset directory (a failed import is reported, not thrown), then each invocation sent by
// the parent over IPC is run and answered. Plain JavaScript: it must not need a TypeScript loader.
import { pathToFileURL } from 'node:url';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

const [codeDir, handlerString] = process.argv.slice(2);
const dot = handlerString.lastIndexOf('.');
const moduleName = handlerString.slice(0, dot);
const exportName = handlerString.slice(dot + 1);

let handler;
try {
  const file = ['.mjs', '.js', '.cjs'].map((ext) => join(codeDir, moduleName + ext)).find((f) => existsSync(f));
  if (!file) throw new Error(`no module ${moduleName}.mjs/.js/.cjs in the code`);
  const module = await import(pathToFileURL(file).href);
  handler = module[exportName];
  if (typeof handler !== 'function') throw new Error(`the module exports no function "${exportName}"`);
  process.send({ type: 'ready' });
} catch (error) {
  process.send({
    type: 'import-failed',
    message: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
  });
}

process.on('message', async ({ id, event, context }) => {
  const lambdaContext = { ...context, getRemainingTimeInMillis: () => 10_000, done() {}, fail() {}, succeed() {} };
  try {
    const result = await handler(event, lambdaContext);
    process.send({ type: 'result', id, result });
  } catch (error) {
    process.send({
      type: 'error',
      id,
      message: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
    });
  }
});
