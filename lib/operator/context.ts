/**
 * What the operator tooling (the settings-page side: CLI, library) talks to: the same
 * repositories the handlers use, on the embedded store or a deployed stack's tables.
 *
 * Target selection, from the environment:
 * - `DYNAMODB_ENDPOINT` set: that endpoint (e.g. the one `npm start` prints);
 * - otherwise AWS, with the default credential chain and `AWS_REGION`;
 * - table names from `KEYS_TABLE`, `USAGE_TABLE`, `BRANCH_DATA_TABLE` (a deployed stack's
 *   outputs), defaulting to the local stack's names.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { ConfigError, readDynamoDbSettings, TABLE_ENV, type TableNames } from '../../shared/config';
import { createDocumentClient } from '../../shared/dynamodb';
import { BranchDataRepository } from '../../shared/repositories/branch-data';
import { KeysRepository } from '../../shared/repositories/keys';
import { UsageRepository } from '../../shared/repositories/usage';
import { LOCAL_TABLE_NAMES } from '../local/dynamo';

type Env = Record<string, string | undefined>;

export interface OperatorContext {
  tables: TableNames;
  endpoint?: string;
  keys: KeysRepository;
  usage: UsageRepository;
  branchData: BranchDataRepository;
  /** The document client (it also sends plain commands such as CreateTable). */
  client: DynamoDBDocumentClient;
  close(): void;
}

export const operatorTableNames = (env: Env = process.env): TableNames => ({
  keys: env[TABLE_ENV.keys]?.trim() || LOCAL_TABLE_NAMES.keys,
  usage: env[TABLE_ENV.usage]?.trim() || LOCAL_TABLE_NAMES.usage,
  branchData: env[TABLE_ENV.branchData]?.trim() || LOCAL_TABLE_NAMES.branchData,
});

export const createOperatorContext = (env: Env = process.env): OperatorContext => {
  if (!env.DYNAMODB_ENDPOINT?.trim() && !env.AWS_REGION?.trim() && !env.AWS_DEFAULT_REGION?.trim()) {
    throw new ConfigError(
      'No target: set DYNAMODB_ENDPOINT for a local DynamoDB (npm start prints it), or AWS_REGION and the table names for a deployed stack',
    );
  }
  const settings = readDynamoDbSettings(env);
  const tables = operatorTableNames(env);
  const documentClient = createDocumentClient(settings, env);
  return {
    tables,
    ...(settings.endpoint ? { endpoint: settings.endpoint } : {}),
    keys: new KeysRepository(documentClient, tables.keys, settings.deadlineMs),
    usage: new UsageRepository(documentClient, tables.usage, settings.deadlineMs),
    branchData: new BranchDataRepository(documentClient, tables.branchData, settings.deadlineMs),
    client: documentClient,
    close: () => documentClient.destroy(),
  };
};
