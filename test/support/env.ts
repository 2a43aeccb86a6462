/**
 * Runs before each test file's modules load: its table names, on the file's own embedded
 * DynamoDB (environment.ts), and the settings every test starts from.
 */
const suffix = `${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
process.env.KEYS_TABLE = `test-keys-${suffix}`;
process.env.USAGE_TABLE = `test-usage-${suffix}`;
process.env.BRANCH_DATA_TABLE = `test-branch-data-${suffix}`;
process.env.ROLLUPS_TABLE = `test-rollups-${suffix}`;
process.env.RATE_LIMITS_TABLE = `test-rate-limits-${suffix}`;
process.env.ACTIVITY_TABLE = `test-key-activity-${suffix}`;
process.env.AWS_REGION = 'local';
// Tests fire far more than 50 calls a second with one key; test/rate-limits.test.ts sets its own limits.
// 500 = LEASE_ABOVE, the most counted exactly: every call one counter write, as with the deployment's
// 50/s, so tests that count a call's DynamoDB commands see it (leasing: test/rate-limit-lease.test.ts).
process.env.DEFAULT_RATE_LIMIT = '500/s';
// Quiet by default; a test that reads logs turns them on with captureLogs().
process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';
process.env.POWERTOOLS_METRICS_NAMESPACE = 'BranchApiTest';
// Set by lib/local/invoke.ts once its invocation store exists, which a new test file's realm lacks.
delete process.env.AWS_LAMBDA_MAX_CONCURRENCY;
// A busy CI machine can hold one embedded DynamoDB call past the deployed 500 ms attempt: give the
// tests a roomier bound (attempts derived from it, shared/config/env.ts). Tests of the deadline
// itself set their own (FAST_FAILURE_ENV in test/support/harness.ts).
process.env.DYNAMODB_DEADLINE_MS = '8000';
