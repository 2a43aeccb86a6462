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
/** Emitted for every call answered 429 (the API's 429 rate alarm divides it by the calls). */
export const RATE_LIMITED_METRIC = 'RateLimitedCalls';
