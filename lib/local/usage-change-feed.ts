/**
 * The usage table's change feed for `npm start`: the generic feed (./change-feed.ts) delivering
 * to the deployed aggregator function itself, with records that fail every delivery set aside in
 * the rollups table, and a mark in that table while it runs, so that a start after a crash
 * recounts what the crash left unapplied (docs/decisions.md "Local store and change feed").
 */
import { DeleteCommand, GetCommand, PutCommand, paginateScan } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { Context, DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { createDocumentClient } from '../../shared/data/dynamodb';
import { RollupsRepository } from '../../shared/data/repositories/rollups';
import { usageTable } from '../../shared/data/tables';
import { hourOf } from '../../shared/domain/rollups';
import { readDynamoDbSettings } from '../../shared/config/env';
import { AGGREGATOR_ENTRY } from '../../shared/lambda/usage-stream';
import type { OperatorContext } from '../operator/context';
import { operatorTableNames } from '../operator/context';
import { rebuildRollups } from '../operator/usage-rebuild';
import { usageRetentionDays } from '../operator/usage-rollups';
import { startChangeFeed, type ChangeFeed, type ChangeFeedOptions } from './change-feed';
import { buildContext } from './events';
import { loadHandler } from './functions';
import { invokeFunction } from './invoke';
import type { StreamChange } from './stream-events';

export interface UsageChangeFeedOptions extends Pick<
  ChangeFeedOptions,
  'port' | 'host' | 'onError' | 'shards' | 'retryDelayMs' | 'maxAttempts' | 'store' | 'storeDown'
> {
  /** The DynamoDB holding the tables. */
  target: string;
  /** The usage table's name. */
  usageTable: string;
  /** The rollups table's name: where records that fail every delivery are set aside. @default ROLLUPS_TABLE or the local name */
  rollupsTable?: string;
}

export interface UsageChangeFeed extends ChangeFeed {
  /**
   * Marks the feed running; when a run before it stopped without applying every call, recounts
   * the rollups since that run's last applied point first. Call once the tables exist.
   */
  begin(ctx: OperatorContext): Promise<Recovery | undefined>;
}

/** What a start did about a run that ended without applying every call. */
export interface Recovery {
  since: string;
  /** Calls the rollups hold for the recounted period now, over every branch. */
  calls: number;
  /** Branches whose recount failed, with the command that repairs each. */
  failed: { branchId: string; error: string; repair: string }[];
}

type StreamHandler = (event: DynamoDBStreamEvent, context: Context) => Promise<DynamoDBBatchResponse>;

/** A clean stop waits this long for the feed to apply what it holds. */
export const DRAIN_ON_STOP_MS = 10_000;
/** How far before a pending write its call may have started (a request's deadline, with room). */
const CALL_MARGIN_MS = 60_000;
/** How often the running mark moves forward. */
const MARK_EVERY_MS = 60_000;
/** The running feed's mark: a partition no branch id can be (ids never start with `#`). */
const RUNNING_MARK = { branch_id: '#local-feed', sk: 'running' };

const repairOf = (branchId: string, since: string) => `branch-api usage rebuild --branch ${branchId} --since ${since}`;

/** The dead-letter store: set-aside records go to the rollups table, under their branch, where `usage` and the console find them. */
export const rollupsSetAside = (target: string, rollupsTable: string) => {
  const client = createDocumentClient(readDynamoDbSettings({ DYNAMODB_ENDPOINT: target }));
  const rollups = new RollupsRepository(client, rollupsTable);
  return {
    setAside: async (change: StreamChange, reason: string) => {
      const image = change.newImage ? (unmarshall(change.newImage) as Record<string, unknown>) : {};
      const branchId = typeof image.branch_id === 'string' ? image.branch_id : '#unknown';
      const since = hourOf(typeof image.timestamp === 'string' ? image.timestamp : Date.now());
      await rollups
        .setAside(
          { record: { ...image, branch_id: branchId }, sequence: change.sequenceNumber, reason },
          usageRetentionDays(process.env),
        )
        .catch((error: unknown) => {
          throw new Error(`A call could not be set aside (${String(error)}); repair: ${repairOf(branchId, since)}`);
        });
    },
    client,
    close: () => client.destroy(),
  };
};

/** Every branch that has keys (and so may have calls): a scan, as the local store is small. */
const branchesWithKeys = async (ctx: OperatorContext): Promise<string[]> => {
  const found = new Set<string>();
  const pages = paginateScan({ client: ctx.client }, { TableName: ctx.tables.keys, ProjectionExpression: 'branch_id' });
  for await (const page of pages) for (const item of page.Items ?? []) found.add(String(item.branch_id));
  return [...found].sort();
};

/** Recounts every branch's rollups since `since` (nothing else writes usage yet: no settle, no lag). */
const recount = async (ctx: OperatorContext, since: string): Promise<Recovery> => {
  const recovery: Recovery = { since, calls: 0, failed: [] };
  for (const branchId of await branchesWithKeys(ctx)) {
    try {
      const result = await rebuildRollups(ctx, { branchId, since, settleSeconds: 0, maxLagSeconds: 0 });
      recovery.calls += result.calls_after;
    } catch (error) {
      recovery.failed.push({ branchId, error: (error as Error).message, repair: repairOf(branchId, since) });
    }
  }
  return recovery;
};

/**
 * The change feed of the usage table, delivering to the deployed aggregator function itself,
 * invoked as Lambda would. Its module is loaded at the first delivery, when the environment
 * (ROLLUPS_TABLE, DYNAMODB_ENDPOINT) is set, as Lambda loads it with the function's configuration.
 */
export const startUsageChangeFeed = async (options: UsageChangeFeedOptions): Promise<UsageChangeFeed> => {
  let aggregator: Promise<StreamHandler> | undefined;
  const { target, usageTable: tableName, rollupsTable, ...rest } = options;
  const rollupsTableName = rollupsTable ?? operatorTableNames(process.env).rollups;
  const store = rollupsSetAside(target, rollupsTableName);
  const feed = await startChangeFeed({
    target,
    tableName,
    keyAttributes: [usageTable.partitionKey.name, usageTable.sortKey!.name],
    handler: async (event) => {
      aggregator ??= loadHandler<StreamHandler>(AGGREGATOR_ENTRY);
      return invokeFunction(await aggregator, event, buildContext('branch-api-aggregate-usage'));
    },
    setAside: store.setAside,
    ...rest,
  });
  const onError = options.onError ?? (() => undefined);
  let marked: string | undefined;
  const mark = async (since: string) => {
    await store.client.send(new PutCommand({ TableName: rollupsTableName, Item: { ...RUNNING_MARK, since } }));
    marked = since;
  };
  // Moves the mark to the hour of the oldest call still to apply: a recount starts there.
  const advance = () => {
    const oldest = feed.oldestPending() ?? Date.now();
    const since = hourOf(oldest - CALL_MARGIN_MS);
    if (marked !== undefined && since > marked) mark(since).catch(onError);
  };
  const timer = setInterval(advance, MARK_EVERY_MS).unref();
  return {
    ...feed,
    begin: async (ctx) => {
      const { Item: previous } = await store.client.send(
        new GetCommand({ TableName: rollupsTableName, Key: RUNNING_MARK, ConsistentRead: true }),
      );
      const recovery = typeof previous?.since === 'string' ? await recount(ctx, previous.since) : undefined;
      await mark(hourOf(Date.now() - CALL_MARGIN_MS));
      return recovery;
    },
    close: async () => {
      clearInterval(timer);
      let timeout: NodeJS.Timeout | undefined;
      const drained = await Promise.race([
        feed.drain().then(() => true),
        new Promise<boolean>((resolve) => (timeout = setTimeout(() => resolve(false), DRAIN_ON_STOP_MS))),
      ]);
      clearTimeout(timeout);
      // Everything applied: nothing for the next start to recount. Otherwise the mark stays.
      if (drained && marked !== undefined) {
        await store.client.send(new DeleteCommand({ TableName: rollupsTableName, Key: RUNNING_MARK })).catch(onError);
      }
      await feed.close();
      store.close();
    },
  };
};
