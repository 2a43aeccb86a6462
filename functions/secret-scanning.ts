/**
 * POST /security/secret-scanning: GitHub's secret scanning reports of leaked keys. No API key:
 * the report's signature is its authentication (shared/api/secret-scanning.ts).
 */
import { createMiddlewareChain } from '../shared/api/middleware-chain';
import { routeKey, secretScanningRoute } from '../shared/api/routes';
import { createSecretScanningHandler } from '../shared/api/secret-scanning';
import { PublicKeySource } from '../shared/data/secret-scanning-keys';
import { readSecretScanningSettings } from '../shared/lambda/config';
import { logger, metrics } from '../shared/lambda/observability';
import { keyEvents, keys } from '../shared/lambda/runtime';

const settings = readSecretScanningSettings(process.env);

export const handler = createMiddlewareChain(
  createSecretScanningHandler({
    publicKeys: new PublicKeySource({ url: settings.keysUrl, timeoutMs: settings.keysTimeoutMs }),
    keys,
    keyEvents,
    logger,
  }),
  { logger, metrics, route: routeKey(secretScanningRoute) },
);
