/**
 * The repositories over one document client: what the Lambda runtime, the operator library
 * and the tests all build, one way.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { ApiTableNames } from '../tables';
import { BranchDataRepository } from './branch-data';
import { KeysRepository } from './keys';
import { RateLimitsRepository } from './rate-limits';
import { UsageRepository } from './usage';

export interface Repositories {
  keys: KeysRepository;
  usage: UsageRepository;
  branchData: BranchDataRepository;
  rateLimits: RateLimitsRepository;
}

/** @param deadlineMs longest one repository call may take, retries included */
export const createRepositories = (
  client: DynamoDBDocumentClient,
  tables: ApiTableNames,
  deadlineMs?: number,
): Repositories => ({
  keys: new KeysRepository(client, tables.keys, deadlineMs),
  usage: new UsageRepository(client, tables.usage, deadlineMs),
  branchData: new BranchDataRepository(client, tables.branchData, deadlineMs),
  rateLimits: new RateLimitsRepository(client, tables.rateLimits, deadlineMs),
});

export { BranchDataRepository, KeysRepository, RateLimitsRepository, UsageRepository };
export type { Page, PageRequest } from './page';
