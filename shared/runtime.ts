/**
 * What one Lambda container shares across requests, built once at module load: configuration,
 * the DynamoDB document client and the repositories over it. No I/O happens here.
 */
import { loadConfig } from './config';
import { createDocumentClient } from './dynamodb';
import { BranchDataRepository } from './repositories/branch-data';
import { KeysRepository } from './repositories/keys';
import { UsageRepository } from './repositories/usage';

export const config = loadConfig();
export const documentClient = createDocumentClient(config.dynamodb);

const { deadlineMs } = config.dynamodb;
export const keys = new KeysRepository(documentClient, config.tables.keys, deadlineMs);
export const usage = new UsageRepository(documentClient, config.tables.usage, deadlineMs);
export const branchData = new BranchDataRepository(documentClient, config.tables.branchData, deadlineMs);
