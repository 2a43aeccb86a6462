/**
 * The usage table's change feed for `npm start`: the generic feed (./change-feed.ts) delivering
 * to the deployed aggregator function itself, with records that fail every delivery set aside in
 * the rollups table, and crash marks: before a call reaches the store, the branch and hour it is
 * counted in are marked in the rollups table, and a mark goes once nothing of its hour is left to
 * apply. A start that finds marks recounts those hours (docs/decisions.md "Local store and change feed").
 */
import { setTimeout as sleep } from 'node:timers/promises';
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
import { startChangeFeed, type ChangeFeedOptions } from './change-feed';
import { createKeyLocks, type Item } from './change-capture';
import { buildContext } from './events';
import { loadHandler } from './functions';
import { invokeFunction } from './invoke';
import type { StreamChange } from './stream-events';

export interface UsageChangeFeedOptions extends Pick<
  ChangeFeedOptions,
  'port' | 'host' | 'onError' | 'shards' | 'batchWindowMs' | 'retryDelayMs' | 'maxAttempts' | 'store' | 'storeDown'
> {
  /** The DynamoDB holding the tables. */
  target: string;
  /** The usage table's name. */
  usageTable: string;
  /** The rollups table's name: where records that fail every delivery are set aside. @default ROLLUPS_TABLE or the local name */
  rollupsTable?: string;
}

export type UsageChangeFeed = Awaited<ReturnType<typeof startUsageChangeFeed>>;

/** What a start did about a run that ended without applying every call. */
export interface Recovery {
  /** The periods recounted (whole hours, `until` exclusive). */
  recounted: { branchId: string; since: string; until: string }[];
  /** Calls the rollups hold for the recounted periods now. */
  calls: number;
  /** Periods whose recount failed, with the command that repairs each (they stay marked for the next start). */
  failed: { branchId: string; error: string; repair: string }[];
}

type StreamHandler = (event: DynamoDBStreamEvent, context: Context) => Promise<DynamoDBBatchResponse>;

/** A clean stop waits this long for the feed to apply what it holds. */
export const DRAIN_ON_STOP_MS = 10_000;
/** How often marks of hours with nothing left to apply are removed. */
const SWEEP_EVERY_MS = 60_000;
const HOUR_MS = 3_600_000;

const repairOf = (branchId: string, since: string, until?: string) =>
  `branch-api usage rebuild --branch ${branchId} --since ${since}${until ? ` --until ${until}` : ''}`;

/** The dead-letter store: set-aside records go to the rollups table, under their branch, where `usage` and the console find them. */
export const rollupsSetAside = (target: string, rollupsTable: string) => {
  const client = createDocumentClient(readDynamoDbSettings({ DYNAMODB_ENDPOINT: target }));
  const rollups = new RollupsRepository(client, rollupsTable);
  return {
    setAside: async (change: StreamChange, reason: string) => {
      const image = change.newImage ? (unmarshall(change.newImage) as Record<string, unknown>) : {};
      const branchId = typeof image.branch_id === 'string' ? image.branch_id : '#unknown';
      const since = hourOf(typeof image.timestamp === 'string' ? image.timestamp : Date.now());
      await rollups.repairs
        .setAside(
          { record: { ...image, branch_id: branchId }, sequence: change.sequenceNumber, reason },
          usageRetentionDays(process.env),
        )
        .catch((error: unknown) => {
          throw new Error(`A call could not be set aside (${String(error)}); repair: ${repairOf(branchId, since)}`);
        });
    },
    rollups,
    close: () => client.destroy(),
  };
};

/** The branch and hour a stored usage item is counted in, as the mark's text; undefined for an item no rollup counts. */
const hourOfItem = (item: Item | undefined): string | undefined => {
  const [branchId, time] = [item?.branch_id?.S, item?.timestamp?.S];
  return branchId && time && !Number.isNaN(Date.parse(time)) ? JSON.stringify([branchId, hourOf(time)]) : undefined;
};

/**
 * The crash marks of a running feed: a branch hour is marked before the first write of one of its
 * calls is forwarded, and unmarked by a sweep once no write of it is in flight and no change of
 * it waits for delivery. Operations on one mark run in turn, so a mark is never removed after a
 * later write has put it back.
 */
const crashMarks = (rollups: RollupsRepository, onError: (error: unknown) => void) => {
  const marked = new Map<string, Promise<void>>();
  const inFlight = new Map<string, number>();
  const exclusive = createKeyLocks();
  const inTurn = (mark: string, operation: (branchId: string, hour: string) => Promise<void>) =>
    exclusive([mark], () => operation(...(JSON.parse(mark) as [string, string])));
  const mark = (text: string) => {
    let put = marked.get(text);
    if (!put) {
      put = inTurn(text, (branchId, hour) => rollups.repairs.markPending(branchId, hour));
      marked.set(text, put);
      put.catch(() => marked.get(text) === put && marked.delete(text));
    }
    return put;
  };
  return {
    around: async <T>(puts: Item[], write: () => Promise<T>): Promise<T> => {
      const marks = [...new Set(puts.flatMap((item) => hourOfItem(item) ?? []))];
      for (const text of marks) inFlight.set(text, (inFlight.get(text) ?? 0) + 1);
      try {
        await Promise.all(marks.map(mark));
        return await write();
      } finally {
        for (const text of marks) {
          const left = inFlight.get(text)! - 1;
          if (left > 0) inFlight.set(text, left);
          else inFlight.delete(text);
        }
      }
    },
    /** Removes the marks of hours with nothing left to apply; resolves once they are removed. */
    sweep: async (pending: readonly StreamChange[]) => {
      const needed = new Set([...inFlight.keys(), ...pending.flatMap((change) => hourOfItem(change.newImage) ?? [])]);
      const removed = [...marked.keys()].filter((text) => !needed.has(text));
      for (const text of removed) marked.delete(text);
      await Promise.all(
        removed.map((text) =>
          inTurn(text, (branchId, hour) => rollups.repairs.clearPending(branchId, hour)).catch(onError),
        ),
      );
    },
  };
};

/** Recounts the marked hours of each branch, a run of consecutive hours at a time (nothing else writes usage yet: no settle, no lag). */
const recount = async (ctx: OperatorContext, rollups: RollupsRepository): Promise<Recovery | undefined> => {
  const marks = await rollups.repairs.pendingHours();
  if (marks.length === 0) return undefined;
  const recovery: Recovery = { recounted: [], calls: 0, failed: [] };
  const runs: { branchId: string; hours: string[] }[] = [];
  marks.sort((a, b) => a.branchId.localeCompare(b.branchId) || a.hour.localeCompare(b.hour));
  for (const { branchId, hour } of marks) {
    const last = runs.at(-1);
    if (last?.branchId === branchId && Date.parse(last.hours.at(-1)!) + HOUR_MS === Date.parse(hour))
      last.hours.push(hour);
    else runs.push({ branchId, hours: [hour] });
  }
  for (const { branchId, hours } of runs) {
    const [since, until] = [hours[0]!, new Date(Date.parse(hours.at(-1)!) + HOUR_MS).toISOString()];
    try {
      const result = await rebuildRollups(ctx, { branchId, since, until, settleSeconds: 0, maxLagSeconds: 0 });
      recovery.calls += result.calls_after;
      recovery.recounted.push({ branchId, since, until });
      for (const hour of hours) await rollups.repairs.clearPending(branchId, hour);
    } catch (error) {
      recovery.failed.push({ branchId, error: (error as Error).message, repair: repairOf(branchId, since, until) });
    }
  }
  return recovery;
};

/**
 * The change feed of the usage table, delivering to the deployed aggregator function itself,
 * invoked as Lambda would. Its module is loaded at the first delivery, when the environment
 * (ROLLUPS_TABLE, DYNAMODB_ENDPOINT) is set, as Lambda loads it with the function's configuration.
 */
export const startUsageChangeFeed = async (options: UsageChangeFeedOptions) => {
  let aggregator: Promise<StreamHandler> | undefined;
  const { target, usageTable: tableName, rollupsTable, ...rest } = options;
  const onError = options.onError ?? (() => undefined);
  const store = rollupsSetAside(target, rollupsTable ?? operatorTableNames(process.env).rollups);
  const marks = crashMarks(store.rollups, onError);
  let recovering: Promise<unknown> | undefined;
  const feed = await startChangeFeed({
    target,
    tableName,
    keyAttributes: [usageTable.partitionKey.name, usageTable.sortKey!.name],
    handler: async (event) => {
      aggregator ??= loadHandler<StreamHandler>(AGGREGATOR_ENTRY);
      return invokeFunction(await aggregator, event, buildContext('branch-api-aggregate-usage'));
    },
    setAside: store.setAside,
    // A recount at the start must not read a call whose change is still to come: writes wait for it.
    aroundWrite: async (puts, write) => {
      await recovering;
      return marks.around(puts, write);
    },
    ...rest,
  });
  const timer = setInterval(() => void marks.sweep(feed.pending()), SWEEP_EVERY_MS).unref();
  return {
    ...feed,
    // Drained, nothing is left to apply: no mark is needed any more.
    drain: () => feed.drain().then(() => marks.sweep(feed.pending())),
    /**
     * Recounts the hours a run before it left marked (it stopped before applying their calls); the
     * feed's writes wait meanwhile. Call once the tables exist.
     */
    begin: async (ctx: OperatorContext): Promise<Recovery | undefined> => {
      const recovered = recount(ctx, store.rollups);
      const done = () => (recovering = undefined);
      recovering = recovered.then(done, done);
      return recovered;
    },
    close: async () => {
      clearInterval(timer);
      await Promise.race([feed.drain(), sleep(DRAIN_ON_STOP_MS, undefined, { ref: false })]);
      // What was applied needs no recount; the marks of what was not stay for the next start.
      await marks.sweep(feed.pending());
      await feed.close();
      store.close();
    },
  };
};
