/**
 * What one Lambda container shares across requests, built once at module load: configuration,
 * the DynamoDB document client and the repositories an endpoint reads and writes. No I/O happens here.
 */
import { loadConfig } from './config';
import { createDocumentClient } from '../data/dynamodb';
import { BranchDataRepository } from '../data/repositories/branch-data';
import { KeyReader } from '../data/repositories/key-reader';
import { RateLimitsRepository } from '../data/repositories/rate-limits';
import { UsageRecorder } from '../data/repositories/usage';
import { createKeyEventEmitter } from '../data/key-events';
import { logger } from './observability';

export const config = loadConfig();
export const documentClient = createDocumentClient(config.dynamodb);
/** Key events of this container (docs/decisions.md "Key events"); sending never fails an action. */
export const keyEvents = createKeyEventEmitter(config.keyEvents, logger);
export const keyReader = new KeyReader(documentClient, config.tables.keys);
export const usage = new UsageRecorder(documentClient, config.tables.usage);
export const branchData = new BranchDataRepository(documentClient, config.tables.branchData);
export const rateLimits = new RateLimitsRepository(documentClient, config.tables.rateLimits);
