/**
 * The daily scheduled function: "Key Expiring" events for keys that expire within 7 days, once per
 * key (shared/lambda/key-expiry.ts). Not an API function: no HTTP chain. It reads the keys table
 * (a Scan, once a day, never on a request path) and puts events on the bus.
 */
import middy from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { createKeyEventEmitter } from '../shared/data/key-events';
import { createDocumentClient } from '../shared/data/dynamodb';
import { KeyExpiryClaims } from '../shared/data/repositories/key-expiry-claims';
import { readDynamoDbSettings, readKeyEventSettings, readTableNames } from '../shared/config/env';
import { expiringUntil, sendExpiringEvents } from '../shared/lambda/key-expiry';
import { logger } from '../shared/lambda/observability';

const settings = readDynamoDbSettings(process.env);
const tables = readTableNames(process.env, ['keys']);
const claims = new KeyExpiryClaims(createDocumentClient(settings), tables.keys);
const keyEvents = createKeyEventEmitter(readKeyEventSettings(process.env), logger);

export const handler = middy(async (): Promise<{ sent: number }> => {
  const now = new Date();
  const candidates = await claims.listExpiring(now, expiringUntil(now));
  const sent = await sendExpiringEvents({ claims, keyEvents, candidates, now });
  logger.info('Key Expiring events sent', { sent: sent.length, key_ids: sent.map((key) => key.key_id) });
  return { sent: sent.length };
}).use(injectLambdaContext(logger, { resetKeys: true }));
