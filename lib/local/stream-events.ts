/**
 * DynamoDB stream events as Lambda receives them (NEW_IMAGE view), built from written items: what
 * the local change feed delivers and the tests replay.
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
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
  /** Increasing within a partition, as DynamoDB's are within a shard. */
  sequenceNumber: string;
}

export const streamRecord = (change: StreamChange, tableArn: string): DynamoDBRecord => ({
  eventID: change.sequenceNumber,
  eventName: change.eventName,
  eventVersion: '1.1',
  eventSource: 'aws:dynamodb',
  awsRegion: 'local',
  eventSourceARN: `${tableArn}/stream/local`,
  dynamodb: {
    ApproximateCreationDateTime: Math.floor(Date.now() / 1000),
    Keys: change.keys as NonNullable<DynamoDBRecord['dynamodb']>['Keys'],
    ...(change.newImage ? { NewImage: change.newImage as NonNullable<DynamoDBRecord['dynamodb']>['NewImage'] } : {}),
    SequenceNumber: change.sequenceNumber,
    SizeBytes: JSON.stringify(change.newImage ?? change.keys).length,
    StreamViewType: 'NEW_IMAGE',
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
