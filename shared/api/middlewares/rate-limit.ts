import type { Logger } from '@aws-lambda-powertools/logger';
import { MetricUnit, type Metrics } from '@aws-lambda-powertools/metrics';
import { rateLimited } from '../errors';
import { RATE_LIMIT_COUNTER_FAILED_METRIC, RATE_LIMITED_METRIC } from '../../domain/telemetry';
import { blockSize, LEASE_ABOVE, rateLimitOf, type RateLimit } from '../../domain/rate-limit';
import { leases, outcomeOfCount, windowMemory, type Outcome } from './rate-limit-lease';
import type { ApiContext, ApiMiddleware, ApiRequest } from './types';
import type { ApiKeyRecord } from '../../domain/key-record';
import type { RateLimitsRepository } from '../../data/repositories/rate-limits';

export interface RateLimitOptions {
  counter: Pick<RateLimitsRepository, 'increment'>;
  /** The limit of keys stored without one (DEFAULT_RATE_LIMIT). */
  defaultLimit: RateLimit;
  logger: Pick<Logger, 'warn'>;
  /** Published after the request by the chain (logMetrics). */
  metrics: Pick<Metrics, 'addMetric'>;
  /** Clock, in epoch milliseconds. */
  now?: () => number;
  /** Keys remembered as used up in this container; beyond it the expired entries are dropped. @default 10000 */
  maxRemembered?: number;
  /** Limits above this many calls per window are counted in leased blocks (rate-limit-lease.ts). @default LEASE_ABOVE (500) */
  leaseAbove?: number;
  /** Keys holding a lease in this container; beyond it the expired leases are dropped. @default 10000 */
  maxLeases?: number;
  /**
   * Distinct stored limits kept parsed; past it the memory starts again. A limit is an operator's
   * setting, so few differ. @default 1000
   */
  maxPolicies?: number;
  /**
   * Called when this container first refuses a key in a window (the key events' "rate limit
   * reached", shared/lambda/handler.ts); awaited before the 429 is answered. @default - none
   */
  onLimitReached?: (apiKey: ApiKeyRecord, at: number) => Promise<void> | void;
}

// Looked up on each call (not bound at load), so a test can move the clock with jest.setSystemTime.
const defaults = {
  now: () => Date.now(),
  maxRemembered: 10_000,
  leaseAbove: LEASE_ABOVE,
  maxLeases: 10_000,
  maxPolicies: 1000,
};

/** A stored limit, parsed, with its RateLimit-Policy field written once. */
export interface Policy extends RateLimit {
  readonly field: string;
}

interface Window {
  readonly keyId: string;
  readonly policy: Policy;
  /** Epoch milliseconds at which the window starts and ends. */
  readonly startsAt: number;
  readonly endsAt: number;
  /** Epoch milliseconds at which the call arrived: every field and memory of the call is as of then. */
  readonly at: number;
  /** A revoked or expired key: counted and limited, but its refusal stays its own when under the limit. */
  readonly refusedKey: boolean;
  readonly apiKey: ApiKeyRecord;
  /** The counter's decision, started in `before` (or `onError` for a refused key); settled once. */
  count?: Promise<Outcome>;
  settled?: boolean;
}

const secondsUntil = (endsAt: number, now: number): number => Math.max(1, Math.ceil((endsAt - now) / 1000));

/** Written into the request's own header set (requestContext starts each request without one). */
const setHeader = (context: ApiContext, name: string, value: string): void => {
  (context.responseHeaders ??= {})[name] = value;
};

const policyOf = (rate: RateLimit): Policy => ({ ...rate, field: `"key";q=${rate.limit};w=${rate.windowSeconds}` });

const remainingField = (left: number, { endsAt, at }: Window): string =>
  `"key";r=${left};t=${secondsUntil(endsAt, at)}`;

/** A key's limit, parsed once per distinct stored text (as `rateLimitOf` reads it), `max` texts at most. */
export const policyMemory = (defaultLimit: RateLimit, max: number) => {
  const parsed = new Map<string, Policy>();
  const defaultPolicy = policyOf(defaultLimit);
  return {
    of: (stored: string | undefined): Policy => {
      if (stored === undefined) return defaultPolicy;
      let policy = parsed.get(stored);
      if (policy === undefined) {
        if (parsed.size >= max) parsed.clear();
        policy = policyOf(rateLimitOf(stored, defaultLimit));
        parsed.set(stored, policy);
      }
      return policy;
    },
    /** Texts held parsed now. */
    size: () => parsed.size,
  };
};

/** The 429 of a used-up window, with the same fields as the response headers; counted for the 429 rate alarm. */
const refusal = (metrics: Pick<Metrics, 'addMetric'>, context: ApiContext, window: Window) => {
  metrics.addMetric(RATE_LIMITED_METRIC, MetricUnit.Count, 1);
  const fields = { 'RateLimit-Policy': window.policy.field, RateLimit: remainingField(0, window) };
  Object.assign((context.responseHeaders ??= {}), fields);
  return rateLimited(secondsUntil(window.endsAt, window.at), fields);
};

/** The fixed window, aligned to the clock, that the instant `at` falls in. */
const windowOf = (apiKey: ApiKeyRecord, policy: Policy, at: number, refusedKey: boolean): Window => {
  const windowMs = policy.windowSeconds * 1000;
  const startsAt = Math.floor(at / windowMs) * windowMs;
  return { keyId: apiKey.key_id, apiKey, policy, startsAt, endsAt: startsAt + windowMs, at, refusedKey };
};

/** Each request's window, set where its count starts. */
const windowsOnContext = new WeakMap<ApiContext, Window>();

/** What one limiter (one container) remembers across calls. */
const limiterOf = (settings: RateLimitOptions & typeof defaults) => ({
  settings,
  // key_id → end of its used-up window: later calls get their 429 from memory, without a write, so
  // a flood costs at most `limit + containers` writes a window and can't throttle the counter open.
  usedUp: windowMemory<number>(settings.maxRemembered, (endsAt) => endsAt),
  leased: leases(settings.maxLeases),
  policies: policyMemory(settings.defaultLimit, settings.maxPolicies),
});
type Limiter = ReturnType<typeof limiterOf>;

/** Counts a call in its window; resolves to the counter's decision, never rejects. */
const countCall = async (limiter: Limiter, window: Window): Promise<Outcome> => {
  const { counter, leaseAbove } = limiter.settings;
  const { keyId, policy, startsAt, endsAt, at } = window;
  const limit = policy.limit;
  const block = blockSize(limit, leaseAbove);
  const take = (by?: number) => counter.increment(keyId, startsAt / 1000, policy.windowSeconds, by);
  // At or below leaseAbove every call is one counter write: the count is exact.
  if (block > 1) return limiter.leased.acquire({ keyId, limit, block, endsAt, take }, at);
  try {
    return outcomeOfCount(await take(), limit);
  } catch (error) {
    return { error };
  }
};

/** Opens the call's window and starts counting it; throws the 429 when the window is known used up. */
const startCount = (limiter: Limiter, context: ApiContext, refusedKey: boolean): void => {
  const { apiKey } = context;
  if (!apiKey) return;
  // The window of the moment the request arrived: the one its usage record's timestamp falls in.
  const at = context.receivedAt?.getTime() ?? limiter.settings.now();
  const window = windowOf(apiKey, limiter.policies.of(apiKey.rate_limit), at, refusedKey);
  windowsOnContext.set(context, window);
  if (!refusedKey) setHeader(context, 'RateLimit-Policy', window.policy.field);
  const until = limiter.usedUp.get(window.keyId);
  if (until !== undefined && until > at) throw refusal(limiter.settings.metrics, context, window);
  limiter.usedUp.forget(window.keyId);
  window.count = countCall(limiter, window);
};

/** The counter's answer: the 429 to answer with, if the key is over its limit. */
const decide = async (limiter: Limiter, context: ApiContext, window: Window, result: Outcome) => {
  const { logger, metrics, onLimitReached } = limiter.settings;
  if ('error' in result) {
    // Fail open: the call proceeds, with no RateLimit field since the remaining count is unknown.
    logger.warn('Rate limit counter not updated; call admitted', { error: result.error, key_id: window.keyId });
    metrics.addMetric(RATE_LIMIT_COUNTER_FAILED_METRIC, MetricUnit.Count, 1);
    return undefined;
  }
  // As of the call's arrival (window.at), not the counter's answer: the instant of its usage record.
  if (result.reached) limiter.usedUp.remember(window.keyId, window.endsAt, window.at); // every later call is over
  if (result.over) {
    // The key events' "rate limit reached" (shared/lambda/handler.ts): a live key's first refusal here.
    if (!window.refusedKey) await onLimitReached?.(window.apiKey, window.at);
    return refusal(metrics, context, window);
  }
  if (!window.refusedKey) setHeader(context, 'RateLimit', remainingField(result.left, window));
  return undefined;
};

/** Waits for the request's count, once, and decides; nothing when no count is pending. */
const settle = async (limiter: Limiter, context: ApiContext): Promise<Error | undefined> => {
  const window = windowsOnContext.get(context);
  if (!window?.count || window.settled) return undefined;
  window.settled = true;
  return decide(limiter, context, window, await window.count);
};

/**
 * Per-key fixed-window rate limit (docs/capacity.md "Per key"), right after `authenticate`: `before`
 * starts the count beside the handler's read, `after`/`onError` turn it into a 429 when over.
 * Revoked and expired keys are counted too, so their floods get no more than a live key's.
 */
export const rateLimit = (opts: RateLimitOptions): ApiMiddleware => {
  const limiter = limiterOf({ ...defaults, ...opts });
  const { onLimitReached } = limiter.settings;

  const rateLimitBefore = async ({ context }: ApiRequest): Promise<void> => {
    try {
      startCount(limiter, context, false);
    } catch (fromMemory) {
      // Often a window's first refusal (the call that reached the limit was admitted): the hook keeps its event to one per hour.
      const window = windowsOnContext.get(context);
      if (window) await onLimitReached?.(window.apiKey, window.at);
      throw fromMemory;
    }
  };

  // A refusal thrown here goes to onError, which answers the 429.
  const rateLimitAfter = async ({ context }: ApiRequest): Promise<void> => {
    const refused = await settle(limiter, context);
    if (refused) throw refused;
  };

  const rateLimitOnError = async (request: ApiRequest): Promise<void> => {
    const { context } = request;
    // A key `authenticate` found and refused (revoked or expired) never reached `before`: under its
    // limit it keeps its 401, without rate-limit fields; past it, a 429.
    if (context.apiKey && windowsOnContext.get(context) === undefined) {
      try {
        startCount(limiter, context, true);
      } catch (fromMemory) {
        request.error = fromMemory as Error;
        return;
      }
    }
    const refused = await settle(limiter, context);
    if (refused) request.error = refused;
  };

  return { before: rateLimitBefore, after: rateLimitAfter, onError: rateLimitOnError, name: 'rateLimit' };
};
