/**
 * The shape of a usage record, checked where one arrives from outside the request path: the
 * aggregator's stream images and `usage replay`'s log lines. Its own module, so the endpoint
 * bundles, which only write records, carry no zod.
 */
import * as z from 'zod/mini';
import type { UsageRecord } from './usage-record';

/** zod/mini: the full zod would more than double the aggregator's bundle (test/cdk/aggregator-bundle.test.ts). */
export const UsageRecordSchema = z.object({
  key_id: z.string().check(z.minLength(1)),
  branch_id: z.string().check(z.minLength(1)),
  method: z.string(),
  path: z.string(),
  route: z.string(),
  status: z.int().check(z.gte(100), z.lte(599)),
  response_time_ms: z.number().check(z.gte(0)),
  timestamp: z.iso.datetime(),
  request_id: z.string().check(z.minLength(1)),
  source_ip: z.optional(z.string()),
}) satisfies z.ZodMiniType<UsageRecord>;
