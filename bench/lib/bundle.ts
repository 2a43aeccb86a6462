/**
 * Builds a bundle with the esbuild options the CDK stack uses: BUNDLING from
 * lib/infra/api-function.ts, translated the way NodejsFunction turns it into esbuild arguments
 * (bundle, platform node, outfile index.mjs for ESM, minify, source map mode, sources content,
 * main fields, external modules, `esbuildArgs` such as `--alias`), run in the project root.
 */
import { mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { build, type BuildOptions } from 'esbuild';
import { BUNDLING } from '../../lib/infra/api-function';
import { PROJECT_ROOT } from './fixtures';

const sourcemapOf = (): BuildOptions['sourcemap'] => {
  // As NodejsFunction: a source map mode turns source maps on by itself.
  if (!(BUNDLING.sourceMapMode ?? BUNDLING.sourceMap)) return false;
  const mode = BUNDLING.sourceMapMode ?? 'default';
  return mode === 'default' ? true : (mode as 'linked' | 'external' | 'inline' | 'both');
};

/** `--alias: ['a=b', …]` → { a: 'b' }; other esbuildArgs are not used by the stack. */
const aliasOf = (): Record<string, string> => {
  const raw = BUNDLING.esbuildArgs?.['--alias'];
  const entries = Array.isArray(raw) ? raw : raw === undefined || typeof raw === 'boolean' ? [] : [raw];
  return Object.fromEntries(
    entries.map((entry) => {
      const at = String(entry).indexOf('=');
      return [String(entry).slice(0, at), String(entry).slice(at + 1)];
    }),
  );
};

export const esbuildOptions = (entry: string, outdir: string): BuildOptions => {
  const unsupported = Object.keys(BUNDLING.esbuildArgs ?? {}).filter((name) => name !== '--alias');
  if (unsupported.length > 0) throw new Error(`bench/lib/bundle.ts does not translate esbuildArgs ${unsupported}`);
  return {
    absWorkingDir: PROJECT_ROOT,
    entryPoints: [join(PROJECT_ROOT, entry)],
    bundle: true,
    platform: 'node',
    target: BUNDLING.target ?? 'node24',
    format: BUNDLING.format === 'esm' ? 'esm' : 'cjs',
    outfile: join(outdir, BUNDLING.format === 'esm' ? 'index.mjs' : 'index.js'),
    minify: BUNDLING.minify ?? false,
    sourcemap: sourcemapOf(),
    sourcesContent: BUNDLING.sourcesContent ?? true,
    ...(BUNDLING.mainFields ? { mainFields: BUNDLING.mainFields } : {}),
    external: BUNDLING.bundleAwsSDK ? [...(BUNDLING.externalModules ?? [])] : ['@aws-sdk/*'],
    alias: aliasOf(),
    ...(BUNDLING.keepNames ? { keepNames: true } : {}),
    ...(BUNDLING.define ? { define: BUNDLING.define } : {}),
    ...(BUNDLING.banner ? { banner: { js: BUNDLING.banner } } : {}),
    ...(BUNDLING.footer ? { footer: { js: BUNDLING.footer } } : {}),
    logLevel: 'warning',
  };
};

export interface Bundle {
  name: string;
  file: string;
  bytes: number;
}

/**
 * Bundles `entry` (relative to the project root) into `outdir/<name>/index.mjs`. lib/project-paths.ts
 * finds the checkout from its own folder, which a bundle elsewhere does not have: it is told.
 */
export const buildBundle = async (name: string, entry: string, outdir: string): Promise<Bundle> => {
  const dir = join(outdir, name);
  mkdirSync(dir, { recursive: true });
  const options = esbuildOptions(entry, dir);
  await build({
    ...options,
    define: { ...options.define, 'import.meta.dirname': JSON.stringify(join(PROJECT_ROOT, 'lib')) },
  });
  const file = options.outfile!;
  return { name, file, bytes: statSync(file).size };
};
