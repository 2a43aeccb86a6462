/**
 * Builds an endpoint function: the handler plus the whole shared stack (authentication, scope,
 * usage record, error mapping, headers). A handler file only says what it reads.
 */
import { authenticate, recordUsage, requireScope } from './middlewares';
import type { AuthenticatedContext } from './middlewares';
import { logger, metrics } from './observability';
import { getRoute, routeKey, type RouteId } from './routes';
import { config, keys, usage } from './runtime';
import { createStack, type StackHandler } from './stack';

export const createApiHandler = (routeId: RouteId, handler: StackHandler<AuthenticatedContext>) => {
  const route = getRoute(routeId);
  return createStack(handler as StackHandler, {
    route: routeKey(route),
    guards: [authenticate({ keys }), requireScope({ scope: route.scope })],
    observers: [recordUsage({ usage, logger, metrics, retentionDays: config.usageRetentionDays })],
  });
};
