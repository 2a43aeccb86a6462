/**
 * Creates the tables from the shared definitions (shared/data/tables.ts) on the target DynamoDB: the
 * embedded one of `npm start` and the tests, or AWS for `branch-api tables create`.
 */
import { CreateTableCommand, waitUntilTableExists, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createTableInput, tableDefinitions, type TableNames } from '../../shared/data/tables';

/**
 * Creates every table that does not exist yet and waits until all are ACTIVE; returns the names
 * it created. TTL is not set here: dynalite has no UpdateTimeToLive (docs/toolchain.md); the CDK
 * stack sets it on AWS.
 */
export const ensureTables = async (
  anyClient: DynamoDBClient | DynamoDBDocumentClient,
  names: Partial<TableNames>,
): Promise<string[]> => {
  // Only the tables named: the tests and tools that use the API tables alone create those.
  const definitions = tableDefinitions.filter((definition) => names[definition.name] !== undefined);
  // A document client sends plain (non-document) commands unchanged.
  const client = anyClient as DynamoDBClient;
  const created: string[] = [];
  for (const definition of definitions) {
    const tableName = names[definition.name]!;
    try {
      await client.send(new CreateTableCommand(createTableInput(definition, tableName)));
      created.push(tableName);
    } catch (error) {
      if ((error as Error).name !== 'ResourceInUseException') throw error;
    }
  }
  const waiter = { client, minDelay: 0.1, maxDelay: 0.1, maxWaitTime: 60 };
  for (const definition of definitions) await waitUntilTableExists(waiter, { TableName: names[definition.name]! });
  return created;
};
