/**
 * Small pieces of the verifier's scenario (lib/verify/verify-assembly.ts): route selection as API
 * Gateway does it, the API's table names as the functions read them, the documented list
 * operations, and the error code of an answer.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { API_TABLES, TABLE_ENV, type ApiTableNames } from '../../shared/data/tables';
import type { Assembly, Json, TemplateRoute } from './assembly';

const OPENAPI_FILE = join(import.meta.dirname, '..', '..', 'docs', 'openapi.json');

/** API Gateway's route selection over the template's route keys, `$default` last. */
export const routeMatcher = (routes: readonly TemplateRoute[]) => {
  const compiled = routes
    .filter((route) => route.routeKey !== '$default')
    .map((route) => {
      const [method, template = ''] = route.routeKey.split(' ');
      const names: string[] = [];
      const source = template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{(\w+)\}/g, (_m, name: string) => {
        names.push(name);
        return '([^/]+)';
      });
      return { route, method, names, regex: new RegExp(`^${source}$`) };
    });
  const fallback = routes.find((route) => route.routeKey === '$default');
  return (method: string, path: string) => {
    for (const candidate of compiled) {
      const match = candidate.regex.exec(path);
      if (match && candidate.method === method) {
        const pathParameters = Object.fromEntries(candidate.names.map((name, i) => [name, match[i + 1] ?? '']));
        return { route: candidate.route, pathParameters };
      }
    }
    return fallback ? { route: fallback, pathParameters: undefined } : undefined;
  };
};

/** The API's table names as functions read them from their environment (the first function that names them all). */
export const tableNamesOf = (assembly: Assembly): ApiTableNames | undefined => {
  for (const fn of assembly.functions) {
    const names = Object.fromEntries(API_TABLES.map((name) => [name, fn.environment[TABLE_ENV[name]]]));
    if (Object.values(names).every((value) => value !== undefined)) return names as unknown as ApiTableNames;
  }
  return undefined;
};

/** Query parameters each documented operation takes (a list takes `limit` and `cursor`). */
export const listOperations = (): Set<string> => {
  const document = JSON.parse(readFileSync(OPENAPI_FILE, 'utf8')) as Json;
  const lists = new Set<string>();
  for (const [path, item] of Object.entries<Json>(document.paths)) {
    for (const [method, operation] of Object.entries<Json>(item)) {
      const parameters = JSON.stringify(operation.parameters ?? []);
      if (parameters.includes('Limit') || parameters.includes('"limit"')) lists.add(`${method.toUpperCase()} ${path}`);
    }
  }
  return lists;
};

/** `error.code` of an error body, if it has one. */
export const errorCodeOf = (body: string | undefined): string | undefined => {
  try {
    const code = (JSON.parse(body ?? '') as { error?: { code?: unknown } }).error?.code;
    return typeof code === 'string' ? code : undefined;
  } catch {
    return undefined;
  }
};
