/**
 * Where the own overhead goes: GetBranch built up one layer at a time, from the bare SDK calls to
 * the real function, every step making the same four DynamoDB calls through the same responder.
 * bench/overhead.ts times each step against the one below it (paired, as the headline figure), so
 * each layer's cost is measured with the SDK's work running around it, as it does in a request.
 * Stubbing the data layer out instead understates our code about sixfold: without the SDK in
 * between, the same code stays hot in the CPU's caches (docs/performance.md "Where the µs go").
 */
import middy from '@middy/core';
import { createMiddlewareChain, type ChainHandler } from '../../shared/api/middleware-chain';
import { authenticate, rateLimit, type ApiContext, type ApiMiddleware } from '../../shared/api/middlewares';
import type { ApiEvent, ApiResponse } from '../../shared/api/http/response';
import { getRoute, routeKey } from '../../shared/api/routes';
import { logger, metrics, telemetry } from '../../shared/lambda/observability';
import { branchData, config, keyReader as keys, rateLimits, usage } from '../../shared/lambda/runtime';
import { responseTimeMs } from '../../shared/domain/usage-record';
import { benchKey } from './fixtures';

type Fn = (event: ApiEvent, context: ApiContext) => Promise<ApiResponse>;

export interface Layer {
  /** What this step adds to the one before it. */
  name: string;
  fn: Fn;
}

const ROUTE = routeKey(getRoute('GetBranch'));

/**
 * GetBranch's work done in the handler, for the parts no middleware of the step does yet: the
 * key lookup (by the hash, no format check), the counter alongside the read, the usage record.
 */
const handlerDoing =
  (doing: { lookup: boolean; count: boolean; record: boolean }): Fn =>
  async (event, context) => {
    const startedAt = performance.now();
    const key = doing.lookup ? (await keys.getByHash(benchKey.hash))! : context.apiKey!;
    const window = Math.floor(Date.now() / 1000);
    const [branch] = await Promise.all([
      branchData.getBranch(key.branch_id),
      doing.count ? rateLimits.increment(key.key_id, window, 1) : undefined,
    ]);
    const body = JSON.stringify(branch);
    if (doing.record) {
      const record = {
        key_id: key.key_id,
        branch_id: key.branch_id,
        method: 'GET',
        path: event.rawPath,
        route: ROUTE,
        status: 200,
        response_time_ms: responseTimeMs(startedAt),
        timestamp: new Date().toISOString(),
        request_id: event.requestContext.requestId,
        source_ip: event.requestContext.http.sourceIp,
      };
      await usage.put(record, config.usageRetentionDays);
    }
    return { statusCode: 200, headers: { 'Content-Type': 'application/json' }, body };
  };

const chain = (doing: Parameters<typeof handlerDoing>[0], guards: ApiMiddleware[] = []) =>
  createMiddlewareChain(handlerDoing(doing) as ChainHandler, { ...telemetry, route: ROUTE, guards }) as Fn;

const limiter = () => rateLimit({ counter: rateLimits, defaultLimit: config.defaultRateLimit, logger, metrics });

/** The steps, bottom up; the first is measured against the bare SDK calls, the last is the real function. */
export const createLayers = (full: Fn): Layer[] => {
  const all = { lookup: true, count: true, record: true };
  const repositories = handlerDoing(all);
  return [
    { name: 'repositories (error translation, item mapping), 4 calls', fn: repositories },
    {
      // As the chain builds it: no early timeout (docs/decisions.md "Deadlines and timeouts").
      name: 'Middy core (run loop, per-request AbortController)',
      fn: middy(repositories, { timeoutEarlyInMillis: 0 }) as unknown as Fn,
    },
    {
      name: 'chain base: Powertools log context, metrics flush, request context, headers, error mapping',
      fn: chain(all),
    },
    {
      name: 'authenticate (bearer parse, checksum, SHA-256, key state)',
      fn: chain({ lookup: false, count: true, record: true }, [authenticate({ keys })]),
    },
    {
      name: 'rate limiter (window, counter bookkeeping, RateLimit fields)',
      fn: chain({ lookup: false, count: false, record: true }, [authenticate({ keys }), limiter()]),
    },
    {
      name: 'IP allowlist, scope, usage observer (the real function)',
      fn: full,
    },
  ];
};
