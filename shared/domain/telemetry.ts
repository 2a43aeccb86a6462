/**
 * The names the service reports under: its Powertools service name, metrics namespace and the
 * metrics it emits. Plain constants, so the CDK stack and alarms read them without building a
 * Logger (shared/lambda/observability.ts builds those, once per container).
 */
export const SERVICE_NAME = 'branch-api';
export const METRICS_NAMESPACE = 'BranchApi';
/** Emitted by the usage middleware when a record could not be stored after its retries. */
export const USAGE_WRITE_FAILED_METRIC = 'UsageRecordWriteFailed';
/** Emitted when a key's rate-limit counter could not be updated and the call was admitted anyway. */
export const RATE_LIMIT_COUNTER_FAILED_METRIC = 'RateLimitCounterFailed';
/** Emitted by the aggregator for stream records that are not usage records (skipped, never retried). */
export const ROLLUP_UNREADABLE_METRIC = 'RollupRecordsUnreadable';
/** Emitted for every call answered 429. */
export const RATE_LIMITED_METRIC = 'RateLimitedCalls';

/**
 * Failures no other alarm sees, since the call or batch succeeds regardless: each metric has an
 * alarm (lib/infra/monitoring.ts), described by what it means and where its details are.
 */
export const FAILURE_METRICS: Readonly<Record<string, string>> = {
  [USAGE_WRITE_FAILED_METRIC]:
    'Usage records could not be stored after retries; each one is in the functions\u2019 error log for replay.',
  [RATE_LIMIT_COUNTER_FAILED_METRIC]:
    'Rate-limit counters could not be updated: those calls were admitted without a limit (fail open, docs/decisions.md "Rate limits").',
  [ROLLUP_UNREADABLE_METRIC]:
    'Usage stream records could not be aggregated (not usage records); they are in the aggregator\u2019s warning log (docs/usage-rollups.md).',
};
