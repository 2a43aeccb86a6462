/**
 * What the operator tooling (the settings-page side: CLI, console, library) talks to: the same
 * repositories the handlers use, on the embedded store or a deployed stack's tables.
 *
 * Target selection, from the environment:
 * - `DYNAMODB_ENDPOINT` set: that endpoint (e.g. the one `npm start` prints);
 * - otherwise AWS, with the default credential chain and `AWS_REGION`;
 * - table names from `KEYS_TABLE`, `USAGE_TABLE`, `BRANCH_DATA_TABLE`, `ROLLUPS_TABLE` (a deployed stack's
 *   outputs), defaulting to the local names.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { ConfigError, readDynamoDbSettings } from '../../shared/lambda/config';
import { createDocumentClient } from '../../shared/data/dynamodb';
import { createRepositories, type Repositories } from '../../shared/data/repositories';
import { RollupsRepository } from '../../shared/data/repositories/rollups';
import { LOCAL_TABLE_NAMES, tableDefinitions, type TableNames } from '../../shared/data/tables';

type Env = Record<string, string | undefined>;

export interface OperatorContext extends Repositories {
  tables: TableNames;
  /** Usage rollups (lib/operator/usage-rollups.ts). */
  rollups: RollupsRepository;
  endpoint?: string;
  /** The document client (it also sends plain commands such as CreateTable). */
  client: DynamoDBDocumentClient;
  close(): void;
}

export const operatorTableNames = (env: Env = process.env): TableNames =>
  Object.fromEntries(
    tableDefinitions.map(({ name, envVar }) => [name, env[envVar]?.trim() || LOCAL_TABLE_NAMES[name]]),
  ) as unknown as TableNames;

export const createOperatorContext = (env: Env = process.env): OperatorContext => {
  if (!env.DYNAMODB_ENDPOINT?.trim() && !env.AWS_REGION?.trim() && !env.AWS_DEFAULT_REGION?.trim()) {
    throw new ConfigError(
      'No target: set DYNAMODB_ENDPOINT for a local DynamoDB (npm start prints it), or AWS_REGION and the table names for a deployed stack',
    );
  }
  const settings = readDynamoDbSettings(env);
  const tables = operatorTableNames(env);
  const client = createDocumentClient(settings, env);
  return {
    tables,
    ...(settings.endpoint ? { endpoint: settings.endpoint } : {}),
    ...createRepositories(client, tables, settings.deadlineMs),
    rollups: new RollupsRepository(client, tables.rollups, settings.deadlineMs),
    client,
    close: () => client.destroy(),
  };
};
