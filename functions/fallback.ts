/**
 * The catch-all function behind API Gateway's `$default` route (and the local gateway's
 * unmatched requests): 405 with `Allow` for a known path, 404 for anything else, in the API's
 * error shape. It reads no key and no table, so it bundles no AWS SDK.
 */
import { methodNotAllowed, notFound } from '../shared/api/errors';
import { createMiddlewareChain } from '../shared/api/middleware-chain';
import { matchRoute, pathWithinStage } from '../shared/api/routes';
import { telemetry } from '../shared/lambda/observability';

export const handler = createMiddlewareChain(async (event) => {
  const match = matchRoute(
    event.requestContext.http.method,
    pathWithinStage(event.rawPath, event.requestContext.stage),
  );
  if (match.kind === 'method_not_allowed') throw methodNotAllowed(match.allow);
  throw notFound('No endpoint at this path. See the API reference for the available paths.');
}, telemetry);
