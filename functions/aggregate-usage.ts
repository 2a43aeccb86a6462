/**
 * The rollups aggregator: the usage table's DynamoDB stream in, hour items of the rollups table
 * out (shared/lambda/usage-stream.ts; docs/usage-rollups.md). Not an API function: no HTTP chain, only
 * Powertools' context and metrics. It reads the rollups table's name and nothing else.
 */
import middy from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { readDynamoDbSettings, readRollupRetentionDays, readTableNames } from '../shared/config/env';
import { createDocumentClient } from '../shared/data/dynamodb';
import { logger, metrics } from '../shared/lambda/observability';
import { RollupsRepository } from '../shared/data/repositories/rollups';
import { createUsageAggregator } from '../shared/lambda/usage-stream';

const settings = readDynamoDbSettings(process.env);
const { rollups } = readTableNames(process.env, ['rollups']);

/** Exported for the local stack, which hands it its in-process transport (lib/local/change-feed.ts). */
export const documentClient = createDocumentClient(settings);

export const handler = middy<DynamoDBStreamEvent, DynamoDBBatchResponse>(
  createUsageAggregator({
    rollups: new RollupsRepository(documentClient, rollups),
    retentionDays: readRollupRetentionDays(process.env),
    logger,
    metrics,
  }),
)
  .use(injectLambdaContext(logger, { resetKeys: true }))
  .use(logMetrics(metrics));
