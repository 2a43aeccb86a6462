import { ConfigError, readSecretScanningSettings } from '../shared/config/env';
import { loadConfig } from '../shared/lambda/config';
import { loadService } from './support/harness';

const complete = {
  KEYS_TABLE: 'keys',
  USAGE_TABLE: 'usage',
  BRANCH_DATA_TABLE: 'branch-data',
  RATE_LIMITS_TABLE: 'rate-limits',
  AWS_REGION: 'eu-west-1',
};

const failureOf = (env: Record<string, string | undefined>): Error => {
  try {
    loadConfig(env);
  } catch (error) {
    return error as Error;
  }
  throw new Error('loadConfig did not fail');
};

describe('loadConfig', () => {
  it('reads the table names, region and the bounded DynamoDB defaults', () => {
    expect(loadConfig(complete)).toEqual({
      tables: { keys: 'keys', usage: 'usage', branchData: 'branch-data', rateLimits: 'rate-limits' },
      dynamodb: {
        region: 'eu-west-1',
        connectTimeoutMs: 500,
        // 2 × 500 ms + up to 1 s of throttling backoff = the 2 s bound.
        requestTimeoutMs: 500,
        maxAttempts: 2,
        deadlineMs: 2000,
      },
      usageRetentionDays: 90,
      defaultRateLimit: { limit: 50, windowSeconds: 1 },
      // No bus and no file: key events go nowhere.
      keyEvents: { region: 'eu-west-1' },
    });
  });

  it('sends key events to the bus when one is named, else to KEY_EVENTS_FILE', () => {
    expect(loadConfig({ ...complete, KEY_EVENT_BUS_NAME: 'bus', KEY_EVENTS_FILE: '/tmp/e.jsonl' }).keyEvents).toEqual({
      busName: 'bus',
      file: '/tmp/e.jsonl',
      region: 'eu-west-1',
    });
  });

  it('reads SECRET_SCANNING_KEYS_URL (GitHub by default, file: allowed) and refuses other schemes, http: too', () => {
    expect(readSecretScanningSettings({})).toEqual({
      keysUrl: 'https://api.github.com/meta/public_keys/secret_scanning',
      keysTimeoutMs: 3000,
    });
    expect(readSecretScanningSettings({ SECRET_SCANNING_KEYS_URL: 'file:///tmp/keys.json' }).keysUrl).toBe(
      'file:///tmp/keys.json',
    );
    for (const bad of ['ftp://example.com/keys', 'not a url', 'http://example.com/keys']) {
      expect(() => readSecretScanningSettings({ SECRET_SCANNING_KEYS_URL: bad })).toThrow(
        /SECRET_SCANNING_KEYS_URL must be an https: or file: URL/,
      );
    }
  });

  it('reads DEFAULT_RATE_LIMIT, and fails at start-up on a bad one', () => {
    expect(loadConfig({ ...complete, DEFAULT_RATE_LIMIT: ' 600/min ' }).defaultRateLimit).toEqual({
      limit: 600,
      windowSeconds: 60,
    });
    const error = failureOf({ ...complete, DEFAULT_RATE_LIMIT: '0/s' });
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.message).toBe('DEFAULT_RATE_LIMIT: Rate limit must allow at least 1 call per window');
  });

  it.each(['KEYS_TABLE', 'USAGE_TABLE', 'BRANCH_DATA_TABLE', 'RATE_LIMITS_TABLE', 'AWS_REGION'])(
    'fails with the name of a missing %s',
    (name) => {
      const error = failureOf({ ...complete, [name]: undefined });
      expect(error).toBeInstanceOf(ConfigError);
      expect(error.message).toBe(`Missing required environment variable ${name}`);
      // Blank counts as missing.
      expect(failureOf({ ...complete, [name]: '  ' }).message).toContain(name);
    },
  );

  it('needs no region with a custom endpoint, and prefers AWS_REGION, then AWS_DEFAULT_REGION', () => {
    const { AWS_REGION: _region, ...noRegion } = complete;
    const local = loadConfig({ ...noRegion, DYNAMODB_ENDPOINT: 'http://127.0.0.1:8000' });
    expect(local.dynamodb).toMatchObject({ endpoint: 'http://127.0.0.1:8000', region: 'local' });
    expect(loadConfig({ ...noRegion, AWS_DEFAULT_REGION: 'us-east-1' }).dynamodb.region).toBe('us-east-1');
    expect(loadConfig({ ...complete, AWS_DEFAULT_REGION: 'us-east-1' }).dynamodb.region).toBe('eu-west-1');
    expect(loadConfig(complete).dynamodb).not.toHaveProperty('endpoint');
  });

  it('reads the timeouts, attempts, deadline and retention from the environment', () => {
    const config = loadConfig({
      ...complete,
      DYNAMODB_CONNECT_TIMEOUT_MS: '50',
      DYNAMODB_REQUEST_TIMEOUT_MS: '60',
      DYNAMODB_MAX_ATTEMPTS: '1',
      DYNAMODB_DEADLINE_MS: '70',
      USAGE_RETENTION_DAYS: '7',
    });
    expect(config.dynamodb).toMatchObject({
      connectTimeoutMs: 50,
      requestTimeoutMs: 60,
      maxAttempts: 1,
      deadlineMs: 70,
    });
    expect(config.usageRetentionDays).toBe(7);
  });

  it('derives the request timeout from the deadline when it is not set', () => {
    const at = (env: Record<string, string>) => loadConfig({ ...complete, ...env }).dynamodb;
    expect(at({ DYNAMODB_DEADLINE_MS: '5000' })).toMatchObject({ maxAttempts: 2, requestTimeoutMs: 2000 });
    // Three attempts wait up to 1 s + 2 s between them: (6000 - 3000) / 3.
    expect(at({ DYNAMODB_DEADLINE_MS: '6000', DYNAMODB_MAX_ATTEMPTS: '3' })).toMatchObject({ requestTimeoutMs: 1000 });
    expect(at({ DYNAMODB_DEADLINE_MS: '300', DYNAMODB_MAX_ATTEMPTS: '1' })).toMatchObject({ requestTimeoutMs: 300 });
  });

  it.each([
    [
      { DYNAMODB_REQUEST_TIMEOUT_MS: '1000' },
      '2 × DYNAMODB_REQUEST_TIMEOUT_MS=1000 + up to 1000 ms of retry backoff = 3000 ms',
    ],
    [{ DYNAMODB_MAX_ATTEMPTS: '3' }, '3 × DYNAMODB_REQUEST_TIMEOUT_MS=1 + up to 3000 ms of retry backoff = 3003 ms'],
    [{ DYNAMODB_DEADLINE_MS: '1000' }, '2 × DYNAMODB_REQUEST_TIMEOUT_MS=1 + up to 1000 ms of retry backoff = 1002 ms'],
  ])('refuses settings whose worst case exceeds the deadline: %j', (env, arithmetic) => {
    const error = failureOf({ ...complete, ...env });
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.message).toContain('DynamoDB settings exceed DYNAMODB_DEADLINE_MS=');
    expect(error.message).toContain(`DYNAMODB_MAX_ATTEMPTS=${arithmetic}`);
  });

  it.each([
    ['DYNAMODB_CONNECT_TIMEOUT_MS', '0'],
    ['DYNAMODB_REQUEST_TIMEOUT_MS', '-5'],
    ['DYNAMODB_MAX_ATTEMPTS', '1.5'],
    ['DYNAMODB_DEADLINE_MS', 'soon'],
    ['USAGE_RETENTION_DAYS', '1e400'],
  ])('refuses %s=%s with the name and the value', (name, value) => {
    const error = failureOf({ ...complete, [name]: value });
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.message).toBe(`Environment variable ${name} must be a positive integer, got "${value}"`);
  });
});

describe('DYNAMODB_ENDPOINT', () => {
  it.each(['http://127.0.0.1:8000', 'https://dynamodb.eu-west-1.amazonaws.com', ' http://localhost:8000 '])(
    'accepts %j',
    (endpoint) => {
      expect(loadConfig({ ...complete, DYNAMODB_ENDPOINT: endpoint }).dynamodb.endpoint).toBe(endpoint.trim());
    },
  );

  it.each(['localhost:8000', '127.0.0.1:8000', 'http://', 'ftp://x', 'http:x', '//x', 'http ://x'])(
    'refuses %j, naming the variable',
    (endpoint) => {
      const error = failureOf({ ...complete, DYNAMODB_ENDPOINT: endpoint });
      expect(error).toBeInstanceOf(ConfigError);
      expect(error.message).toBe(
        `Environment variable DYNAMODB_ENDPOINT must be an http:// or https:// URL such as http://127.0.0.1:8000, got "${endpoint}"`,
      );
    },
  );
});

describe('a function container', () => {
  it('fails to load, naming the variable, when a table name is missing', async () => {
    await expect(loadService({ USAGE_TABLE: undefined })).rejects.toThrow(
      'Missing required environment variable USAGE_TABLE',
    );
    // The environment of the other tests is left as it was.
    expect(process.env.USAGE_TABLE).toMatch(/^test-usage-/);
  });
});
