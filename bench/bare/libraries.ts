/**
 * The cold start's yardstick: a function made of the same libraries as ours, used as their
 * authors document them, and nothing of ours: the DynamoDB document client with the four commands
 * the handlers send, Middy, Powertools Logger and Metrics with their middlewares.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';

const logger = new Logger();
const metrics = new Metrics();
const client = DynamoDBDocumentClient.from(new DynamoDBClient({}));

interface Event {
  table: string;
  key: Record<string, string>;
  item: Record<string, string>;
}

export const handler = middy(async ({ table, key, item }: Event) => {
  const { Item } = await client.send(new GetCommand({ TableName: table, Key: key }));
  await client.send(
    new UpdateCommand({
      TableName: table,
      Key: key,
      UpdateExpression: 'ADD hits :one',
      ExpressionAttributeValues: { ':one': 1 },
    }),
  );
  const { Items } = await client.send(
    new QueryCommand({
      TableName: table,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': key.pk },
    }),
  );
  await client.send(new PutCommand({ TableName: table, Item: item }));
  return { statusCode: 200, body: JSON.stringify({ Item, Items }) };
})
  .use(injectLambdaContext(logger))
  .use(logMetrics(metrics));
