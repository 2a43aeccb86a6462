/**
 * The repositories over one document client: what the Lambda runtime, the operator library
 * and the tests all build, one way.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { ApiTableNames, TableNames } from '../tables';
import { ActivityRepository } from './activity';
import { BranchDataRepository } from './branch-data';
import { KeyExpiryClaims } from './key-expiry-claims';
import { KeyOutbox } from './key-outbox';
import { KeyReader } from './key-reader';
import { KeysRepository } from './keys';
import { RateLimitsRepository } from './rate-limits';
import { UsageRepository } from './usage';
import type { KeyEventEmitter } from '../key-events';

/**
 * @param keyEvents where the keys repository sends each key action's event
 */
export const createRepositories = (
  client: DynamoDBDocumentClient,
  tables: ApiTableNames & Partial<Pick<TableNames, 'activity'>>,
  keyEvents?: KeyEventEmitter,
) => {
  const activity = tables.activity === undefined ? undefined : new ActivityRepository(client, tables.activity);
  return {
    keys: new KeysRepository(client, tables.keys, activity, keyEvents),
    /** The hot-path lookup of the same table. */
    keyReader: new KeyReader(client, tables.keys),
    /** "Key Expiring" claims on the same table's items. */
    expiryClaims: new KeyExpiryClaims(client, tables.keys),
    usage: new UsageRepository(client, tables.usage),
    branchData: new BranchDataRepository(client, tables.branchData),
    rateLimits: new RateLimitsRepository(client, tables.rateLimits),
    /** Present when the activity table was named (the operator tooling; no API function has it). */
    ...(activity ? { activity } : {}),
  };
};
export type Repositories = ReturnType<typeof createRepositories>;

export { ActivityRepository, KeyOutbox, KeysRepository };
