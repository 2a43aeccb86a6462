/**
 * Builds an endpoint function: the handler plus the whole middleware chain (authentication, rate
 * limit, IP allowlist, scope, usage record, error mapping, headers). A handler file only says what
 * it reads.
 */
import { authenticate, ipAllowlist, rateLimit, recordUsage, requireScope } from '../api/middlewares';
import type { AuthenticatedContext } from '../api/middlewares';
import { createMiddlewareChain, type ChainHandler } from '../api/middleware-chain';
import { logger, metrics, telemetry } from './observability';
import { getRoute, routeKey, type RouteId } from '../api/routes';
import { config, keyEvents, keyReader, rateLimits, usage } from './runtime';
import { keyEvent, OncePerPeriod, SERVICE_ACTOR } from '../domain/key-events';
import type { ApiKeyRecord } from '../domain/key-record';

/** "Rate limit reached" at most once per key per hour, by the container that first refuses it. */
const RATE_LIMIT_EVENT_PERIOD_MS = 60 * 60 * 1000;
const limitReported = new OncePerPeriod(RATE_LIMIT_EVENT_PERIOD_MS);
const reportLimitReached = async (apiKey: ApiKeyRecord, at: number): Promise<void> => {
  if (!limitReported.first(apiKey.key_id, at)) return;
  const extra: Record<string, string> = apiKey.rate_limit ? { rate_limit: apiKey.rate_limit } : {};
  await keyEvents.emit([keyEvent('rate_limit_reached', apiKey, SERVICE_ACTOR, new Date(at), extra)]);
};

export const createApiHandler = (routeId: RouteId, handler: ChainHandler<AuthenticatedContext>) => {
  const route = getRoute(routeId);
  return createMiddlewareChain(handler as ChainHandler, {
    ...telemetry,
    route: routeKey(route),
    // Every call of a known key is counted and limited, revoked and expired ones too, whatever comes next.
    guards: [
      authenticate({ keys: keyReader }),
      rateLimit({
        counter: rateLimits,
        defaultLimit: config.defaultRateLimit,
        logger,
        metrics,
        onLimitReached: reportLimitReached,
      }),
      ipAllowlist(),
      requireScope({ scope: route.scope }),
    ],
    observers: [recordUsage({ usage, logger, metrics, retentionDays: config.usageRetentionDays })],
  });
};
