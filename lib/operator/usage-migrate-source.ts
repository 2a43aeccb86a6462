/**
 * The usage table before write shards (#22; docs/capacity.md "Migration from the unsharded
 * table"), read by `usage migrate`: partition key `branch_id`, sort key `sk` =
 * `<timestamp>#<request id>`, a `by-key` index on `key_id`, TTL `expires_at_epoch`. Its records
 * are read with a parallel Scan, one segment at a time per worker; nothing is ever written to it.
 */
import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoRepository } from '../../shared/data/dynamodb';
import { OperatorError } from './errors';

/** The old table's name in the embedded store (`npm start --data-dir` of a start before #22). */
export const LEGACY_LOCAL_USAGE_TABLE = 'branch-api-usage';
/** The old key shape: what `describe` checks before anything is read. */
export const LEGACY_USAGE_KEY = { partition: 'branch_id', sort: 'sk' } as const;

export interface ScanPage {
  items: Record<string, unknown>[];
  /** Where the segment continues; absent at its end. */
  next?: Record<string, unknown>;
}

const causeName = (error: unknown) => ((error as { cause?: { name?: string } }).cause ?? {}).name;

export class LegacyUsageTable extends DynamoRepository {
  get name(): string {
    return this.tableName;
  }

  /**
   * Checks that the table exists and has the old key shape; returns its approximate item count
   * (DynamoDB updates it about every six hours: a progress total, not a promise).
   */
  async describe(): Promise<{ itemCount: number | undefined }> {
    const field = 'from_table';
    let output;
    try {
      output = await this.run('DescribeTable', () =>
        this.client.send(new DescribeTableCommand({ TableName: this.tableName })),
      );
    } catch (error) {
      if (causeName(error) === 'ResourceNotFoundException') {
        throw new OperatorError(`No table named ${this.tableName} at this target`, 'invalid_input', field);
      }
      throw error;
    }
    const schema = output.Table?.KeySchema ?? [];
    const named = (type: 'HASH' | 'RANGE') => schema.find((key) => key.KeyType === type)?.AttributeName;
    if (named('HASH') !== LEGACY_USAGE_KEY.partition || named('RANGE') !== LEGACY_USAGE_KEY.sort) {
      throw new OperatorError(
        `${this.tableName} is not an unsharded usage table (partition key ${LEGACY_USAGE_KEY.partition}, sort key ${LEGACY_USAGE_KEY.sort}): its key is ${named('HASH') ?? '-'}, ${named('RANGE') ?? '-'}`,
        'invalid_input',
        field,
      );
    }
    return { itemCount: output.Table?.ItemCount };
  }

  /** One page of one segment of a parallel Scan, items as stored. */
  async scanPage(segment: number, totalSegments: number, limit: number, startKey?: Record<string, unknown>) {
    const output = await this.run('Scan', () =>
      this.client.send(
        new ScanCommand({
          TableName: this.tableName,
          Segment: segment,
          TotalSegments: totalSegments,
          Limit: limit,
          ...(startKey ? { ExclusiveStartKey: startKey } : {}),
        }),
      ),
    );
    const page: ScanPage = { items: output.Items ?? [] };
    if (output.LastEvaluatedKey) page.next = output.LastEvaluatedKey;
    return page;
  }
}
