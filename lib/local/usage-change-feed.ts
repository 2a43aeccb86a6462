/**
 * The usage table's change feed for `npm start`: the generic feed (./change-feed.ts) delivering
 * to the deployed aggregator function itself, with records that fail every delivery set aside in
 * the rollups table (docs/usage-rollups.md "Locally").
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { Context, DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { join } from 'node:path';
import { createDocumentClient } from '../../shared/data/dynamodb';
import { RollupsRepository } from '../../shared/data/repositories/rollups';
import { usageTable } from '../../shared/data/tables';
import { readDynamoDbSettings } from '../../shared/lambda/config';
import { AGGREGATOR_ENTRY } from '../../shared/lambda/usage-stream';
import { operatorTableNames } from '../operator/context';
import { usageRetentionDays } from '../operator/usage-rollups';
import { startChangeFeed, type ChangeFeed, type ChangeFeedOptions } from './change-feed';
import { buildContext } from './events';
import { PROJECT_ROOT } from './gateway';
import { useEmbeddedStore, type InProcessTransport } from './in-process-transport';
import { invokeFunction } from './invoke';
import type { StreamChange } from './stream-events';

export interface UsageChangeFeedOptions extends Pick<
  ChangeFeedOptions,
  'port' | 'host' | 'onError' | 'shards' | 'retryDelayMs' | 'maxAttempts' | 'store'
> {
  /** The DynamoDB holding the tables. */
  target: string;
  /** The usage table's name. */
  usageTable: string;
  /** The rollups table's name: where records that fail every delivery are set aside. @default ROLLUPS_TABLE or the local name */
  rollupsTable?: string;
}

type StreamHandler = (event: DynamoDBStreamEvent, context: Context) => Promise<DynamoDBBatchResponse>;
interface AggregatorModule {
  handler: StreamHandler;
  documentClient: DynamoDBDocumentClient;
}

/** The dead-letter store: set-aside records go to the rollups table, under their branch, where `usage` and the console find them. */
export const rollupsSetAside = (target: string, rollupsTable: string, transport?: InProcessTransport) => {
  const client = createDocumentClient(readDynamoDbSettings({ DYNAMODB_ENDPOINT: target }));
  if (transport) useEmbeddedStore(client, transport);
  const rollups = new RollupsRepository(client, rollupsTable);
  return {
    setAside: async (change: StreamChange, reason: string) => {
      const image = change.newImage ? (unmarshall(change.newImage) as Record<string, unknown>) : {};
      const branchId = typeof image.branch_id === 'string' ? image.branch_id : '#unknown';
      await rollups.setAside(
        { record: { ...image, branch_id: branchId }, sequence: change.sequenceNumber, reason },
        usageRetentionDays(process.env),
      );
    },
    close: () => client.destroy(),
  };
};

/**
 * The change feed of the usage table, delivering to the deployed aggregator function itself,
 * invoked as Lambda would. Its module is loaded at the first delivery, when the environment
 * (ROLLUPS_TABLE, DYNAMODB_ENDPOINT) is set, as Lambda loads it with the function's configuration.
 */
export const startUsageChangeFeed = async (options: UsageChangeFeedOptions): Promise<ChangeFeed> => {
  let aggregator: Promise<StreamHandler> | undefined;
  const { target, usageTable: tableName, rollupsTable, ...rest } = options;
  const store = rollupsSetAside(
    target,
    rollupsTable ?? operatorTableNames(process.env).rollups,
    options.store?.transport,
  );
  const feed = await startChangeFeed({
    target,
    tableName,
    keyAttributes: [usageTable.partitionKey.name, usageTable.sortKey!.name],
    handler: async (event) => {
      aggregator ??= import(join(PROJECT_ROOT, AGGREGATOR_ENTRY)).then((m: AggregatorModule) => {
        // In the embedded store's process, its rollup writes need no socket (lib/local/in-process-transport.ts).
        if (options.store) useEmbeddedStore(m.documentClient, options.store.transport);
        return m.handler;
      });
      return invokeFunction(await aggregator, event, buildContext('branch-api-aggregate-usage'));
    },
    setAside: store.setAside,
    ...rest,
  });
  return {
    ...feed,
    close: async () => {
      await feed.close();
      store.close();
    },
  };
};
