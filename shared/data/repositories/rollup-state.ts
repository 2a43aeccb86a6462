/**
 * The rollups table's bookkeeping beside the hour items (docs/usage-rollups.md): the aggregator's
 * progress ("as of") and the calls set aside because they could not be applied, with the reads
 * and conditional writes the hour items' repository shares.
 */
import {
  DeleteCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
  type QueryCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { ConditionNotMetError } from '../data-store-errors';
import { DynamoRepository } from '../dynamodb';
import type { UsageRecord } from '../../domain/usage-record';

const DAY_SECONDS = 86_400;
/** The aggregator's progress item: a partition no branch id can be (ids never start with `#`). */
const PROGRESS_KEY = { branch_id: '#aggregator', sk: 'progress' };
const SET_ASIDE_PREFIX = 'dead#';
/** Set-aside records read to describe them: enough to name the period to rebuild. */
export const SET_ASIDE_READ_LIMIT = 1000;

export interface SetAsideRecord {
  record: Partial<UsageRecord> & { branch_id: string };
  sequence: string;
  reason: string;
}

export interface SetAsideSummary {
  /** Records set aside (at most SET_ASIDE_READ_LIMIT are read). */
  count: number;
  complete: boolean;
  /** Call times of the oldest and newest. */
  oldest?: string;
  newest?: string;
}

export class RollupStateRepository extends DynamoRepository {
  protected getItem(key: Record<string, string>, projection?: string) {
    return this.run('GetItem', () =>
      this.client.send(
        new GetCommand({
          TableName: this.tableName,
          Key: key,
          ConsistentRead: true,
          ...(projection ? { ProjectionExpression: '#p', ExpressionAttributeNames: { '#p': projection } } : {}),
        }),
      ),
    ).then((output) => output.Item);
  }

  /** Sets a time attribute unless it already holds a later one (a maximum: order and repetition don't matter). */
  protected async setIfNewer(
    key: Record<string, string>,
    name: string,
    at: string,
    extra: Record<string, unknown> = {},
  ) {
    const sets = Object.keys(extra).map((_, i) => `#e${i} = :e${i}`);
    try {
      await this.run('UpdateItem', () =>
        this.client.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: key,
            UpdateExpression: `SET ${['#n = :at', ...sets].join(', ')}`,
            ConditionExpression: 'attribute_not_exists(#n) OR #n < :at',
            ExpressionAttributeNames: {
              '#n': name,
              ...Object.fromEntries(Object.keys(extra).map((attribute, i) => [`#e${i}`, attribute])),
            },
            ExpressionAttributeValues: {
              ':at': at,
              ...Object.fromEntries(Object.values(extra).map((value, i) => [`:e${i}`, value])),
            },
          }),
        ),
      );
    } catch (error) {
      if (!(error instanceof ConditionNotMetError)) throw error;
    }
  }

  /** The aggregator's progress: the newest call time of a batch fully applied (a maximum). */
  recordProgress(asOf: string): Promise<void> {
    return this.setIfNewer(PROGRESS_KEY, 'as_of', asOf, { updated_at: new Date().toISOString() });
  }

  /** The newest call time the aggregator has fully applied; undefined before its first batch. */
  async progress(): Promise<string | undefined> {
    const item = await this.getItem(PROGRESS_KEY, 'as_of');
    return typeof item?.as_of === 'string' ? item.as_of : undefined;
  }

  /** Keeps a stream record the aggregator could not apply, under its branch, until a rebuild repairs its period. */
  async setAside({ record, sequence, reason }: SetAsideRecord, retentionDays: number): Promise<void> {
    const now = new Date().toISOString();
    await this.run('PutItem', () =>
      this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: {
            branch_id: record.branch_id,
            sk: `${SET_ASIDE_PREFIX}${sequence}`,
            record: JSON.stringify(record),
            call_time: typeof record.timestamp === 'string' ? record.timestamp : now,
            ...(typeof record.key_id === 'string' ? { call_key: record.key_id } : {}),
            reason: reason.slice(0, 500),
            set_aside_at: now,
            expires_at_epoch: Math.floor(Date.now() / 1000) + retentionDays * DAY_SECONDS,
          },
        }),
      ),
    );
  }

  /** How many records of a branch are set aside, and the span of their call times. */
  async setAsideOf(branchId: string): Promise<SetAsideSummary> {
    const { items, complete } = await this.queryAll(
      {
        KeyConditionExpression: 'branch_id = :pk AND begins_with(sk, :prefix)',
        ExpressionAttributeValues: { ':pk': branchId, ':prefix': SET_ASIDE_PREFIX },
        ProjectionExpression: 'sk, call_time',
      },
      SET_ASIDE_READ_LIMIT,
    );
    const times = items.map((item) => String(item.call_time)).sort();
    return { count: items.length, complete, ...(times.length ? { oldest: times[0], newest: times.at(-1) } : {}) };
  }

  /** Forgets the set-aside records of a branch whose calls fall in [since, until): a rebuild counted them. */
  async clearSetAside(branchId: string, since: string, until: string, keyId?: string): Promise<number> {
    const { items } = await this.queryAll({
      KeyConditionExpression: 'branch_id = :pk AND begins_with(sk, :prefix)',
      FilterExpression: `call_time >= :since AND call_time < :until${keyId !== undefined ? ' AND call_key = :key' : ''}`,
      ExpressionAttributeValues: {
        ':pk': branchId,
        ':prefix': SET_ASIDE_PREFIX,
        ':since': since,
        ':until': until,
        ...(keyId !== undefined ? { ':key': keyId } : {}),
      },
      ProjectionExpression: 'sk',
    });
    for (const item of items) {
      await this.run('DeleteItem', () =>
        this.client.send(new DeleteCommand({ TableName: this.tableName, Key: { branch_id: branchId, sk: item.sk } })),
      );
    }
    return items.length;
  }

  protected async queryAll(
    input: Omit<QueryCommandInput, 'TableName'>,
    max = Number.POSITIVE_INFINITY,
  ): Promise<{ items: Record<string, unknown>[]; complete: boolean }> {
    const items: Record<string, unknown>[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.run('Query', () =>
        this.client.send(
          new QueryCommand({ TableName: this.tableName, ...input, ...(start ? { ExclusiveStartKey: start } : {}) }),
        ),
      );
      items.push(...(page.Items ?? []));
      start = page.LastEvaluatedKey;
    } while (start && items.length < max);
    return { items: items.slice(0, max), complete: start === undefined && items.length <= max };
  }
}
