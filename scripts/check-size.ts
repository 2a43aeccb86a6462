/**
 * `npm run lint:size`: no function over 80 lines and no source file over 400 lines in bin/,
 * functions/, lib/ and shared/ (the project's standard, README "Layout"). Functions are found with
 * the TypeScript compiler API: declarations, methods, accessors, constructors, function expressions
 * and arrow functions, each measured from its first to its last line (a nested function counts in
 * its parent too, as ESLint's max-lines-per-function counts). Offenders listed in
 * scripts/size-allowlist.json are reported as allowed; an entry that no longer offends is reported
 * as stale, so the list only shrinks. Exits 1 on any offender not on the list.
 *
 *   npm run lint:size               # the four folders of this checkout
 *   tsx scripts/check-size.ts --json
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import ts from 'typescript';
import { PROJECT_ROOT } from '../lib/project-paths';

export const MAX_FUNCTION_LINES = 80;
export const MAX_FILE_LINES = 400;
export const CHECKED_FOLDERS = ['bin', 'functions', 'lib', 'shared'] as const;
const SOURCE_FILE = /\.(ts|tsx|js|mjs|cjs)$/;

export interface Offender {
  /** Path from the project root, with `/`. */
  path: string;
  /** Function name for a long function; absent for a long file. */
  function?: string;
  line: number;
  lines: number;
  limit: number;
}

export interface AllowlistEntry {
  path: string;
  function?: string;
  /** Who is shrinking it, and why it is still here. */
  reason: string;
}

const lineOf = (source: ts.SourceFile, position: number): number =>
  source.getLineAndCharacterOfPosition(position).line + 1;

const propertyName = (name: ts.PropertyName | ts.BindingName): string | undefined =>
  ts.isIdentifier(name) || ts.isStringLiteral(name) || ts.isPrivateIdentifier(name) ? name.text : undefined;

/** The name a reader would search for: the declaration's, or the variable or property it is assigned to. */
const functionName = (node: ts.SignatureDeclaration, source: ts.SourceFile): string => {
  const parent = node.parent;
  if (ts.isClassLike(parent)) {
    const member = ts.isConstructorDeclaration(node)
      ? 'constructor'
      : node.name && propertyName(node.name as ts.PropertyName);
    return `${parent.name?.text ?? '<class>'}.${member || '<member>'}`;
  }
  const own = node.name && propertyName(node.name as ts.PropertyName);
  if (own) return own;
  const assigned =
    (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) &&
    propertyName(parent.name);
  return assigned || `<anonymous@${lineOf(source, node.getStart(source))}>`;
};

const isFunctionLike = (node: ts.Node): node is ts.SignatureDeclaration & { body?: ts.Node } =>
  ts.isFunctionDeclaration(node) ||
  ts.isFunctionExpression(node) ||
  ts.isArrowFunction(node) ||
  ts.isMethodDeclaration(node) ||
  ts.isConstructorDeclaration(node) ||
  ts.isGetAccessorDeclaration(node) ||
  ts.isSetAccessorDeclaration(node);

/** Every function of one source text over the limit, and the file itself when it is over its limit. */
export const measureSource = (path: string, text: string): Offender[] => {
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  const offenders: Offender[] = [];
  const fileLines = text.endsWith('\n') ? text.split('\n').length - 1 : text.split('\n').length;
  if (fileLines > MAX_FILE_LINES) offenders.push({ path, line: 1, lines: fileLines, limit: MAX_FILE_LINES });
  const visit = (node: ts.Node): void => {
    if (isFunctionLike(node) && node.body) {
      const line = lineOf(source, node.getStart(source));
      const lines = lineOf(source, node.getEnd()) - line + 1;
      if (lines > MAX_FUNCTION_LINES) {
        offenders.push({ path, function: functionName(node, source), line, lines, limit: MAX_FUNCTION_LINES });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return offenders;
};

const listSources = (root: string, folder: string): string[] => {
  const entries = (() => {
    try {
      return readdirSync(join(root, folder), { recursive: true, withFileTypes: true });
    } catch {
      return [];
    }
  })();
  return entries
    .filter((entry) => entry.isFile() && SOURCE_FILE.test(entry.name) && !entry.name.endsWith('.d.ts'))
    .map((entry) => relative(root, join(entry.parentPath, entry.name)).split(sep).join('/'))
    .filter((path) => !path.split('/').includes('node_modules'))
    .sort();
};

export const measureTree = (root: string, folders: readonly string[] = CHECKED_FOLDERS): Offender[] =>
  folders
    .flatMap((folder) => listSources(root, folder))
    .flatMap((path) => measureSource(path, readFileSync(join(root, path), 'utf8')));

const matches = (entry: AllowlistEntry, offender: Offender): boolean =>
  entry.path === offender.path && entry.function === offender.function;

export interface SizeReport {
  /** Over a limit and not on the allowlist: lint fails. */
  failures: Offender[];
  /** Over a limit, on the allowlist. */
  allowed: Offender[];
  /** On the allowlist but within the limits now: remove them. */
  stale: AllowlistEntry[];
}

export const checkSizes = (offenders: readonly Offender[], allowlist: readonly AllowlistEntry[]): SizeReport => ({
  failures: offenders.filter((offender) => !allowlist.some((entry) => matches(entry, offender))),
  allowed: offenders.filter((offender) => allowlist.some((entry) => matches(entry, offender))),
  stale: allowlist.filter((entry) => !offenders.some((offender) => matches(entry, offender))),
});

export const readAllowlist = (file: string): AllowlistEntry[] =>
  (JSON.parse(readFileSync(file, 'utf8')) as { entries: AllowlistEntry[] }).entries;

export const describeOffender = ({ path, function: name, line, lines, limit }: Offender): string =>
  name === undefined
    ? `${path}: file has ${lines} lines (limit ${limit})`
    : `${path}:${line} function ${name} has ${lines} lines (limit ${limit})`;

export const formatReport = ({ failures, allowed, stale }: SizeReport): string[] => [
  ...failures.map((offender) => `error  ${describeOffender(offender)}`),
  ...allowed.map((offender) => `allowed  ${describeOffender(offender)} (scripts/size-allowlist.json)`),
  ...stale.map(
    (entry) =>
      `stale  ${entry.path}${entry.function ? ` function ${entry.function}` : ''} is within the limits: ` +
      'remove it from scripts/size-allowlist.json',
  ),
];

const main = (): void => {
  const root = PROJECT_ROOT;
  const report = checkSizes(measureTree(root), readAllowlist(join(root, 'scripts', 'size-allowlist.json')));
  if (process.argv.includes('--json')) console.log(JSON.stringify(report, null, 2));
  else for (const line of formatReport(report)) console.log(line);
  const summary = `${report.failures.length} over the limits, ${report.allowed.length} allowed, ${report.stale.length} stale`;
  console.log(`check-size: ${summary} (functions ≤ ${MAX_FUNCTION_LINES} lines, files ≤ ${MAX_FILE_LINES})`);
  process.exitCode = report.failures.length > 0 ? 1 : 0;
};

if (process.argv[1] && import.meta.filename === process.argv[1]) main();
