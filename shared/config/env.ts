/**
 * Configuration readers over the environment, shared by the Lambda runtime and the operator
 * tooling. A missing or invalid variable fails at start-up with the variable's name, never on a
 * request.
 */
import { DEFAULT_RATE_LIMIT, InvalidRateLimitError, parseRateLimit, type RateLimit } from '../domain/rate-limit';
import { API_TABLES, tableDefinitions, type TableNames } from '../data/tables';
import { DEFAULT_ROLLUP_RETENTION_DAYS } from '../domain/rollups';
import { DEFAULT_USAGE_RETENTION_DAYS } from '../domain/usage-record';

export { TABLE_ENV } from '../data/tables';

import { callBoundMs, maxBackoffMs, type DynamoDbSettings } from '../data/dynamodb';
import type { KeyEventSettings } from '../data/key-events';
import { GITHUB_SECRET_SCANNING_KEYS_URL, keysDocumentUrl } from '../domain/github';

export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Env = Record<string, string | undefined>;

export const requireEnv = (env: Env, name: string): string => {
  const value = env[name]?.trim();
  if (!value) throw new ConfigError(`Missing required environment variable ${name}`);
  return value;
};

export const positiveIntEnv = (env: Env, name: string, fallback: number): number => {
  const raw = env[name]?.trim();
  if (!raw) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value <= 0) {
    throw new ConfigError(`Environment variable ${name} must be a positive integer, got "${raw}"`);
  }
  return value;
};

/** Days a usage record is kept (`USAGE_RETENTION_DAYS`): the API functions and the operator's replay write with it. */
export const readUsageRetentionDays = (env: Env): number =>
  positiveIntEnv(env, 'USAGE_RETENTION_DAYS', DEFAULT_USAGE_RETENTION_DAYS);

/** Days an hour item of the rollups is kept (`ROLLUP_RETENTION_DAYS`): the aggregator and the operator's rebuild. */
export const readRollupRetentionDays = (env: Env): number =>
  positiveIntEnv(env, 'ROLLUP_RETENTION_DAYS', DEFAULT_ROLLUP_RETENTION_DAYS);

/**
 * DYNAMODB_ENDPOINT, when set: an absolute http(s) URL with a host. Checked here, the one place
 * every reader goes through, so `localhost:8000` is named as a bad endpoint instead of
 * surfacing later as an unreachable store or a missing table.
 */
const readEndpoint = (env: Env): string | undefined => {
  const raw = env.DYNAMODB_ENDPOINT?.trim();
  if (!raw) return undefined;
  // The scheme is checked on the text too: URL reads `http:x` as http://x.
  if (!URL.canParse(raw) || !/^https?:\/\//i.test(raw) || !new URL(raw).hostname) {
    throw new ConfigError(
      `Environment variable DYNAMODB_ENDPOINT must be an http:// or https:// URL such as http://127.0.0.1:8000, got "${raw}"`,
    );
  }
  return raw;
};

/**
 * The call bound (DYNAMODB_DEADLINE_MS) and the SDK settings that keep it: unless set, the request
 * timeout is what the bound leaves each attempt after the longest backoff; set, the settings must
 * fit the bound, or start-up fails with the arithmetic (docs/reliability.md "Deadlines").
 */
const readCallBound = (env: Env): Pick<DynamoDbSettings, 'requestTimeoutMs' | 'maxAttempts' | 'deadlineMs'> => {
  const deadlineMs = positiveIntEnv(env, 'DYNAMODB_DEADLINE_MS', 2000);
  const maxAttempts = positiveIntEnv(env, 'DYNAMODB_MAX_ATTEMPTS', 2);
  const derived = Math.floor((deadlineMs - maxBackoffMs(maxAttempts)) / maxAttempts);
  const requestTimeoutMs = positiveIntEnv(env, 'DYNAMODB_REQUEST_TIMEOUT_MS', Math.max(derived, 1));
  const bound = callBoundMs({ maxAttempts, requestTimeoutMs });
  if (bound > deadlineMs) {
    throw new ConfigError(
      `DynamoDB settings exceed DYNAMODB_DEADLINE_MS=${deadlineMs}: DYNAMODB_MAX_ATTEMPTS=${maxAttempts} × ` +
        `DYNAMODB_REQUEST_TIMEOUT_MS=${requestTimeoutMs} + up to ${maxBackoffMs(maxAttempts)} ms of retry backoff ` +
        `= ${bound} ms; lower the attempts or the request timeout, or raise the deadline`,
    );
  }
  return { requestTimeoutMs, maxAttempts, deadlineMs };
};

/**
 * The region the environment sets, in the AWS CLI's order: AWS_REGION, else AWS_DEFAULT_REGION. The
 * operator tooling then asks the profile's config (lib/operator/target.ts `resolveRegion`).
 */
export const readRegion = (env: Env): string | undefined =>
  env.AWS_REGION?.trim() || env.AWS_DEFAULT_REGION?.trim() || undefined;

export const readDynamoDbSettings = (env: Env): DynamoDbSettings => {
  const endpoint = readEndpoint(env);
  return {
    ...(endpoint ? { endpoint } : {}),
    region: readRegion(env) || (endpoint ? 'local' : requireEnv(env, 'AWS_REGION')),
    connectTimeoutMs: positiveIntEnv(env, 'DYNAMODB_CONNECT_TIMEOUT_MS', 500),
    ...readCallBound(env),
  };
};

/**
 * The names of the tables a function uses, each required: the API functions read theirs
 * (the default), the rollups aggregator only the rollups table.
 */
export const readTableNames = <K extends keyof TableNames = (typeof API_TABLES)[number]>(
  env: Env,
  names: readonly K[] = API_TABLES as unknown as readonly K[],
): Pick<TableNames, K> =>
  Object.fromEntries(
    tableDefinitions
      .filter((definition) => (names as readonly string[]).includes(definition.name))
      .map(({ name, envVar }) => [name, requireEnv(env, envVar)]),
  ) as unknown as Pick<TableNames, K>;

export const readDefaultRateLimit = (env: Env): RateLimit => {
  const raw = env.DEFAULT_RATE_LIMIT?.trim() || DEFAULT_RATE_LIMIT;
  try {
    return parseRateLimit(raw);
  } catch (error) {
    if (error instanceof InvalidRateLimitError) throw new ConfigError(`DEFAULT_RATE_LIMIT: ${error.message}`);
    throw error;
  }
};

/** KEY_EVENT_BUS_NAME (deployed) wins over KEY_EVENTS_FILE (local); neither: no events. */
export const readKeyEventSettings = (env: Env): KeyEventSettings => {
  const busName = env.KEY_EVENT_BUS_NAME?.trim();
  const file = env.KEY_EVENTS_FILE?.trim();
  const region = readRegion(env);
  return { ...(busName ? { busName } : {}), ...(file ? { file } : {}), ...(region ? { region } : {}) };
};

/** The public keys document (SECRET_SCANNING_KEYS_URL, https: or file:) and the longest one fetch of it may take. */
export const readSecretScanningSettings = (env: Env) => {
  const keysUrl = env.SECRET_SCANNING_KEYS_URL?.trim() || GITHUB_SECRET_SCANNING_KEYS_URL;
  if (!keysDocumentUrl(keysUrl)) {
    throw new ConfigError(
      `Environment variable SECRET_SCANNING_KEYS_URL must be an https: or file: URL, got "${keysUrl}"`,
    );
  }
  return { keysUrl, keysTimeoutMs: positiveIntEnv(env, 'SECRET_SCANNING_KEYS_TIMEOUT_MS', 3000) };
};
