/**
 * The embedded DynamoDB (dynalite, in-process) and table bootstrap from the shared table
 * definitions. Used by `npm start`, `branch-api tables create` and the tests.
 */
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { CreateTableCommand, DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import dynalite from 'dynalite';
import type { TableNames } from '../../shared/config';
import { branchDataTable, createTableInput, keysTable, usageTable } from '../../shared/tables';

export interface EmbeddedDynamo {
  endpoint: string;
  port: number;
  close(): Promise<void>;
}

export interface EmbeddedDynamoOptions {
  /** 0 picks a free port. @default 0 */
  port?: number;
  /** @default '127.0.0.1' */
  host?: string;
  /** Directory that keeps the data across restarts; in memory when absent. */
  dataDir?: string;
}

export const startEmbeddedDynamo = async (options: EmbeddedDynamoOptions = {}): Promise<EmbeddedDynamo> => {
  const host = options.host ?? '127.0.0.1';
  const server = dynalite({
    createTableMs: 0,
    deleteTableMs: 0,
    updateTableMs: 0,
    ...(options.dataDir ? { path: options.dataDir } : {}),
  });
  server.listen(options.port ?? 0, host);
  await Promise.race([
    once(server, 'listening'),
    once(server, 'error').then(([error]) => {
      throw error;
    }),
  ]);
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://${host}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
};

/** Local default table names (a deployed stack has its own, from its outputs). */
export const LOCAL_TABLE_NAMES: TableNames = {
  keys: 'branch-api-keys',
  usage: 'branch-api-usage',
  branchData: 'branch-api-branch-data',
};

/**
 * Creates any of the three tables that does not exist yet and waits until all are ACTIVE.
 * TTL is not set here: dynalite has no UpdateTimeToLive (the CDK stack sets it on AWS).
 */
export const ensureTables = async (
  anyClient: DynamoDBClient | DynamoDBDocumentClient,
  names: TableNames,
): Promise<string[]> => {
  // A document client sends plain (non-document) commands unchanged.
  const client = anyClient as DynamoDBClient;
  const created: string[] = [];
  const pairs = [
    [keysTable, names.keys],
    [usageTable, names.usage],
    [branchDataTable, names.branchData],
  ] as const;
  for (const [definition, tableName] of pairs) {
    try {
      await client.send(new CreateTableCommand(createTableInput(definition, tableName)));
      created.push(tableName);
    } catch (error) {
      if ((error as Error).name !== 'ResourceInUseException') throw error;
    }
  }
  for (const [, tableName] of pairs) {
    for (let attempt = 0; ; attempt += 1) {
      const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
      if (Table?.TableStatus === 'ACTIVE') break;
      if (attempt > 600) throw new Error(`Table ${tableName} did not become ACTIVE`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  return created;
};
