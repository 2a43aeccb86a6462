/**
 * POST /security/secret-scanning: GitHub's secret scanning reports of leaked keys. No API key:
 * the report's signature is its authentication (shared/api/secret-scanning.ts). Its keys
 * repository copies each `leaked` entry to the activity table at once (ACTIVITY_TABLE).
 */
import { createMiddlewareChain } from '../shared/api/middleware-chain';
import { routeKey, secretScanningRoute } from '../shared/api/routes';
import { createSecretScanningHandler } from '../shared/api/secret-scanning';
import { ActivityRepository, KeysRepository } from '../shared/data/repositories';
import { PublicKeySource } from '../shared/data/secret-scanning-keys';
import { readSecretScanningSettings, readTableNames } from '../shared/lambda/config';
import { logger, metrics } from '../shared/lambda/observability';
import { config, documentClient, keyEvents } from '../shared/lambda/runtime';

const settings = readSecretScanningSettings(process.env);
const { deadlineMs } = config.dynamodb;
const { activity } = readTableNames(process.env, ['activity']);

export const handler = createMiddlewareChain(
  createSecretScanningHandler({
    publicKeys: new PublicKeySource({ url: settings.keysUrl, timeoutMs: settings.keysTimeoutMs }),
    keys: new KeysRepository(
      documentClient,
      config.tables.keys,
      deadlineMs,
      new ActivityRepository(documentClient, activity, deadlineMs),
      keyEvents,
    ),
    logger,
  }),
  { logger, metrics, route: routeKey(secretScanningRoute) },
);
