// Runs one bundled function in this process, as Lambda would: the handler module is imported once
// from the asset directory (a failed import is reported, not thrown), then each invocation sent by
// the parent over IPC is run and answered. Plain JavaScript: it must not need a TypeScript loader.
// A namespace import: registerHooks exists from Node 22.15 only, and a named import would fail to link.
import * as nodeModule from 'node:module';
import { URL, pathToFileURL } from 'node:url';
import { existsSync, realpathSync } from 'node:fs';
import { join, resolve } from 'node:path';

const [codeDir, handlerString, timeoutSeconds = '3'] = process.argv.slice(2);
const dot = handlerString.lastIndexOf('.');
const moduleName = handlerString.slice(0, dot);
const exportName = handlerString.slice(dot + 1);

// Lambda has the asset and its own runtime, nothing else: a package the code resolves outside
// its asset directory (say, from the project's node_modules above cdk.out) would be missing
// there. The runtime provides the AWS SDK for JavaScript v3, taken here from the project.
// Real path: Node names imported modules by theirs, and the assembly may sit under a symlink.
const codeUrl = pathToFileURL((existsSync(codeDir) ? realpathSync(codeDir) : resolve(codeDir)) + '/').href;
const projectUrl = new URL('../../package.json', import.meta.url).href;
const RUNTIME_PROVIDED = /^@(aws-sdk|smithy|aws-crypto)\//;
const isBare = (specifier) =>
  !/^(node:|file:|data:|\.{0,2}\/)/.test(specifier) && !nodeModule.builtinModules.includes(specifier);
nodeModule.registerHooks?.({
  resolve(specifier, context, nextResolve) {
    if (!isBare(specifier) || !context.parentURL?.startsWith(codeUrl)) return nextResolve(specifier, context);
    if (RUNTIME_PROVIDED.test(specifier)) {
      try {
        return nextResolve(specifier, context);
      } catch {
        return nextResolve(specifier, { ...context, parentURL: projectUrl });
      }
    }
    let resolved;
    try {
      resolved = nextResolve(specifier, context);
    } catch {
      // Reported below, with the same words.
    }
    if (!resolved?.url.startsWith(codeUrl)) {
      throw new Error(`package "${specifier}" is not in the asset, and the Lambda runtime does not provide it`);
    }
    return resolved;
  },
});

const failure = (type, error) => ({
  type,
  message: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
});

let handler;
try {
  const file = ['.mjs', '.js', '.cjs'].map((ext) => join(codeDir, moduleName + ext)).find((f) => existsSync(f));
  if (!file) throw new Error(`no module ${moduleName}.mjs/.js/.cjs in the code`);
  const module = await import(pathToFileURL(file).href);
  handler = module[exportName];
  if (typeof handler !== 'function') throw new Error(`the module exports no function "${exportName}"`);
  process.send({ type: 'ready' });
} catch (error) {
  process.send(failure('import-failed', error));
}

process.on('message', async ({ event, context }) => {
  // The template's Timeout: code that budgets its work on the remaining time sees what Lambda gives it.
  const deadline = Date.now() + Number(timeoutSeconds) * 1000;
  const lambdaContext = {
    ...context,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done() {},
    fail() {},
    succeed() {},
  };
  try {
    const result = await handler(event, lambdaContext);
    process.send({ type: 'result', result });
  } catch (error) {
    process.send(failure('error', error));
  }
});
