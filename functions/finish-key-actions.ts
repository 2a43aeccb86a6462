/**
 * Finishes key actions from the keys table's stream (docs/decisions.md "Key events"): the event
 * source passes only records whose new image has entries in its outbox; each key is read again
 * (consistent) and its outbox finished: entries copied to the activity table, events sent in order,
 * finished entries removed. A crash of the function that acted is thus caught up here. The first
 * record whose key still has an entry waiting is answered as a batch item failure, so Lambda
 * retries from it.
 */
import middy from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { createDocumentClient } from '../shared/data/dynamodb';
import { createKeyEventEmitter } from '../shared/data/key-events';
import { ActivityRepository, KeyOutbox } from '../shared/data/repositories';
import { keysTable } from '../shared/data/tables';
import { readDynamoDbSettings, readKeyEventSettings, readTableNames } from '../shared/config/env';
import { logger } from '../shared/lambda/observability';

const tables = readTableNames(process.env, ['keys', 'activity']);
const client = createDocumentClient(readDynamoDbSettings(process.env));
const outbox = new KeyOutbox(
  client,
  tables.keys,
  new ActivityRepository(client, tables.activity),
  createKeyEventEmitter(readKeyEventSettings(process.env), logger),
);

/** Whether the record's key has no entry left waiting (none, or every one now copied and sent). */
const finished = async (record: DynamoDBRecord): Promise<boolean> => {
  const keyHash = record.dynamodb?.Keys?.[keysTable.partitionKey.name]?.S;
  if (!keyHash) return true;
  try {
    return (await outbox.finishKey(keyHash)).length === 0;
  } catch (error) {
    logger.error('Key action not finished', { key_id: record.dynamodb?.NewImage?.key_id?.S, error });
    return false;
  }
};

export const handler = middy(async (event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> => {
  for (const record of event.Records) {
    if (!(await finished(record))) return { batchItemFailures: [{ itemIdentifier: record.dynamodb!.SequenceNumber! }] };
  }
  return { batchItemFailures: [] };
}).use(injectLambdaContext(logger, { resetKeys: true }));
