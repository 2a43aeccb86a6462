/**
 * What one Lambda container shares across requests, built once at module load: configuration,
 * the DynamoDB document client and the repositories over it. No I/O happens here.
 */
import { loadConfig } from './config';
import { createDocumentClient } from '../data/dynamodb';
import { createRepositories } from '../data/repositories';
import { createKeyEventEmitter } from '../data/key-events';
import { logger } from './observability';

export const config = loadConfig();
export const documentClient = createDocumentClient(config.dynamodb);
/** Key events of this container (docs/decisions.md "Key events"); sending never fails an action. */
export const keyEvents = createKeyEventEmitter(config.keyEvents, logger);
export const { keyReader, usage, branchData, rateLimits } = createRepositories(
  documentClient,
  config.tables,
  keyEvents,
);
