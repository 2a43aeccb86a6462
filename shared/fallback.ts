/**
 * The catch-all function behind API Gateway's `$default` route (and the local gateway's
 * unmatched requests): 405 with `Allow` for a known path, 404 for anything else, in the API's
 * error shape. It reads no key and no table.
 */
import { methodNotAllowed, notFound } from './http/errors';
import type { ApiEvent } from './http/response';
import { matchRoute } from './routes';
import { createStack } from './stack';

/** The path relative to {base_url}: API Gateway's rawPath carries the stage as its first segment. */
export const pathWithinStage = (event: ApiEvent): string => {
  const stage = event.requestContext.stage;
  const prefix = stage && stage !== '$default' ? `/${stage}` : '';
  return prefix && event.rawPath.startsWith(`${prefix}/`) ? event.rawPath.slice(prefix.length) : event.rawPath;
};

export const createFallbackHandler = () =>
  createStack(async (event) => {
    const match = matchRoute(event.requestContext.http.method, pathWithinStage(event));
    if (match.kind === 'method_not_allowed') throw methodNotAllowed(match.allow);
    throw notFound('No endpoint at this path. See the API reference for the available paths.');
  });
