/**
 * DynamoDB stream events as Lambda receives them, built from written items: what the local change
 * feed delivers (NEW_IMAGE view), the tests replay and the verifier feeds a template's consumers.
 */
import type { AttributeValue, StreamViewType } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import type { UsageRecord } from '../../shared/domain/usage-record';
import { usageItemOf } from '../../shared/data/repositories/usage';
import { usageTable } from '../../shared/data/tables';

export interface StreamChange {
  eventName: 'INSERT' | 'MODIFY' | 'REMOVE';
  keys: Record<string, AttributeValue>;
  /** Absent for REMOVE. */
  newImage?: Record<string, AttributeValue>;
  /** Absent for INSERT; in a record only where the table's view has old images. */
  oldImage?: Record<string, AttributeValue>;
  /** Increasing within a partition, as DynamoDB's are within a shard. */
  sequenceNumber: string;
}

type Image = NonNullable<DynamoDBRecord['dynamodb']>['NewImage'];

/** One change as its table's stream delivers it, with the images the view type keeps. */
export const streamRecord = (
  change: StreamChange,
  tableArn: string,
  viewType: StreamViewType = 'NEW_IMAGE',
): DynamoDBRecord => ({
  eventID: change.sequenceNumber,
  eventName: change.eventName,
  eventVersion: '1.1',
  eventSource: 'aws:dynamodb',
  awsRegion: tableArn.split(':')[3],
  eventSourceARN: `${tableArn}/stream/local`,
  dynamodb: {
    ApproximateCreationDateTime: Math.floor(Date.now() / 1000),
    Keys: change.keys as Image,
    ...(change.newImage && viewType.startsWith('NEW') ? { NewImage: change.newImage as Image } : {}),
    ...(change.oldImage && viewType.includes('OLD') ? { OldImage: change.oldImage as Image } : {}),
    SequenceNumber: change.sequenceNumber,
    SizeBytes: JSON.stringify(change.newImage ?? change.keys).length,
    StreamViewType: viewType,
  },
});

export const streamEvent = (changes: readonly StreamChange[], tableArn: string): DynamoDBStreamEvent => ({
  Records: changes.map((change) => streamRecord(change, tableArn)),
});

/** Sequence numbers as DynamoDB's: decimal strings of equal width, so they also sort as text. */
export const sequenceNumber = (n: number): string => String(n).padStart(21, '0');

/**
 * The stream change of one stored usage record (the tests build batches with it).
 * `partitionValue` is the usage table's partition key value it was stored under: by default the
 * record's write shard (shared/data/repositories/usage.ts), as the repository writes it.
 */
export const usageChange = (record: UsageRecord, sequence: number | string, partitionValue?: string): StreamChange => {
  // As the usage repository stores it: its write shard's partition key, its sort key, its TTL.
  const item = usageItemOf(record, 1);
  const keys = { [usageTable.partitionKey.name]: partitionValue ?? item.pk, sk: item.sk };
  return {
    eventName: 'INSERT',
    keys: marshall(keys),
    newImage: marshall({ ...item, ...keys }),
    sequenceNumber: typeof sequence === 'number' ? sequenceNumber(sequence) : sequence,
  };
};
