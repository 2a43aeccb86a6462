/** Days DynamoDB TTL keeps a usage record unless `USAGE_RETENTION_DAYS` says otherwise (docs/decisions.md "Usage records"). */
export const DEFAULT_USAGE_RETENTION_DAYS = 90;

/** A record's response time: milliseconds since `startedAt` (a `performance.now()`), two decimals. */
export const responseTimeMs = (startedAt: number): number => Math.round((performance.now() - startedAt) * 100) / 100;

/** One call made with a known key (docs/decisions.md "Usage records"). */
export interface UsageRecord {
  key_id: string;
  branch_id: string;
  method: string;
  /** The path as requested, stage prefix included. */
  path: string;
  /** The route template, e.g. `GET /v1/payment-providers/{id}`. */
  route: string;
  status: number;
  response_time_ms: number;
  timestamp: string;
  request_id: string;
  /** The caller's address as the gateway saw it (`requestContext.http.sourceIp`), as the IP allowlist reads it. */
  source_ip?: string;
}
