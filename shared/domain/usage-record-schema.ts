/**
 * The shape of a usage record, checked where one arrives from outside the request path: the
 * aggregator's stream images and `usage replay`'s log lines. Its own module, so the endpoint
 * bundles, which only write records, carry no zod.
 */
import * as z from 'zod/mini';
import type { UsageRecord } from './usage-record';

/**
 * The longest response a call can have had: Lambda's longest timeout, 15 minutes. Finite and
 * bounded, a sum of them stays a number DynamoDB stores exactly.
 */
export const MAX_RESPONSE_TIME_MS = 900_000;

/** zod/mini: the full zod would more than double the aggregator's bundle (test/cdk/aggregator-bundle.test.ts). */
export const UsageRecordSchema = z.object({
  key_id: z.string().check(z.minLength(1)),
  branch_id: z.string().check(z.minLength(1)),
  method: z.string(),
  path: z.string(),
  route: z.string(),
  status: z.int().check(z.gte(100), z.lte(599)),
  // In hundredths of a millisecond, as the API rounds it (shared/domain/usage-record.ts responseTimeMs).
  response_time_ms: z.number().check(
    z.gte(0),
    z.lte(MAX_RESPONSE_TIME_MS),
    z.refine((ms) => Math.round(ms * 100) / 100 === ms),
  ),
  timestamp: z.iso.datetime(),
  request_id: z.string().check(z.minLength(1)),
  source_ip: z.optional(z.string()),
}) satisfies z.ZodMiniType<UsageRecord>;
