/**
 * POST /security/secret-scanning: GitHub's secret scanning reports of leaked keys. No API key:
 * the report's signature is its authentication (shared/api/secret-scanning.ts). Its keys
 * repository copies each `leaked` entry to the activity table at once when ACTIVITY_TABLE is set
 * (the stack sets it); without it the entry waits on the key item for the operator tooling to copy
 * (docs/decisions.md "Key activity"), so a gateway started without that table still serves.
 */
import { createMiddlewareChain } from '../shared/api/middleware-chain';
import { routeKey, secretScanningRoute } from '../shared/api/routes';
import { createSecretScanningHandler } from '../shared/api/secret-scanning';
import { ActivityRepository, KeysRepository } from '../shared/data/repositories';
import { PublicKeySource } from '../shared/data/secret-scanning-keys';
import { readSecretScanningSettings, TABLE_ENV } from '../shared/config/env';
import { logger, telemetry } from '../shared/lambda/observability';
import { config, documentClient, keyEvents, keyReader } from '../shared/lambda/runtime';

const settings = readSecretScanningSettings(process.env);
const activityTable = process.env[TABLE_ENV.activity]?.trim();

export const handler = createMiddlewareChain(
  createSecretScanningHandler({
    publicKeys: new PublicKeySource({ url: settings.keysUrl, timeoutMs: settings.keysTimeoutMs, logger }),
    keys: new KeysRepository(
      documentClient,
      config.tables.keys,
      activityTable ? new ActivityRepository(documentClient, activityTable) : undefined,
      keyEvents,
    ),
    keyReader,
    logger,
  }),
  // Its calls' bounds don't sum below its timeout (docs/decisions.md "Deadlines and timeouts").
  { ...telemetry, route: routeKey(secretScanningRoute), earlyTimeout: true },
);
