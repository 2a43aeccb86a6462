/**
 * Builds an endpoint function: the handler plus the whole middleware chain (authentication,
 * rate limit, scope, usage record, error mapping, headers). A handler file only says what it reads.
 */
import { authenticate, ipAllowlist, rateLimit, recordUsage, requireScope } from '../api/middlewares';
import type { AuthenticatedContext } from '../api/middlewares';
import { createMiddlewareChain, type ChainHandler } from '../api/middleware-chain';
import { logger, metrics } from './observability';
import { getRoute, routeKey, type RouteId } from '../api/routes';
import { config, keys, rateLimits, usage } from './runtime';

export const createApiHandler = (routeId: RouteId, handler: ChainHandler<AuthenticatedContext>) => {
  const route = getRoute(routeId);
  return createMiddlewareChain(handler as ChainHandler, {
    logger,
    metrics,
    route: routeKey(route),
    // Counted once the key is known to be neither revoked nor expired, whatever comes next.
    guards: [
      authenticate({ keys }),
      rateLimit({ counter: rateLimits, defaultLimit: config.defaultRateLimit, logger, metrics }),
      ipAllowlist(),
      requireScope({ scope: route.scope }),
    ],
    observers: [recordUsage({ usage, logger, metrics, retentionDays: config.usageRetentionDays })],
  });
};
