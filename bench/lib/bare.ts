/**
 * The bare request the service is compared with: the same SDK calls a request of the service
 * makes, with the same inputs, and nothing else: the key GetItem (by a hash given), the rate-limit
 * counter's UpdateItem alongside the data read for the path, the usage PutItem in its write shard
 * (its response time measured, as the spec asks), and a JSON body. No Middy, no middleware, no
 * validation. Shared by the own-overhead part and the bare HTTP server, so both compare with the
 * very same calls.
 */
import {
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { usageShardOf } from '../../shared/data/repositories/usage-shards';
import { responseTimeMs } from '../../shared/domain/usage-record';
import { ACTIVE_PROVIDERS_INDEX, type ApiTableNames } from '../../shared/data/tables';

const PROVIDER_PATH = '/v1/payment-providers/';
/** As the handlers ask: one item more than the default page of 50. */
const QUERY_LIMIT = 51;

/** The data read of a path alone: what a handler with one read does (the depth part's yardstick). */
export const createBareRead =
  (client: DynamoDBDocumentClient, tables: ApiTableNames) =>
  async (path: string, branchId: string): Promise<unknown> => {
    if (path === '/v1/members' || path === '/v1/payment-providers') {
      const members = path === '/v1/members';
      const query = new QueryCommand({
        TableName: tables.branchData,
        ...(members
          ? {
              KeyConditionExpression: 'branch_id = :branch AND begins_with(sk, :prefix)',
              ExpressionAttributeValues: { ':branch': branchId, ':prefix': 'MEMBER#' },
            }
          : {
              IndexName: ACTIVE_PROVIDERS_INDEX,
              KeyConditionExpression: 'branch_id = :branch',
              ExpressionAttributeValues: { ':branch': branchId },
            }),
        Limit: QUERY_LIMIT,
      });
      return (await client.send(query)).Items;
    }
    const sk = path.startsWith(PROVIDER_PATH) ? `PROVIDER#${path.slice(PROVIDER_PATH.length)}` : 'BRANCH';
    return (await client.send(new GetCommand({ TableName: tables.branchData, Key: { branch_id: branchId, sk } }))).Item;
  };

export const createBareRequest = (client: DynamoDBDocumentClient, tables: ApiTableNames) => {
  const read = createBareRead(client, tables);

  /**
   * `path` is relative to {base_url}, e.g. `/v1/members`; `rawPath` is recorded as the usage path,
   * `sourceIp` as the caller's address (every usage record of the service carries one).
   */
  return async (
    path: string,
    rawPath: string,
    keyHash: string,
    requestId: string,
    sourceIp = '127.0.0.1',
  ): Promise<string> => {
    // The record's response time is measured, as every implementation of the spec must: in ms with
    // two decimals, a fraction like the service's, which the SDK writes differently from an integer.
    const startedAt = performance.now();
    const { Item: key } = await client.send(
      new GetCommand({ TableName: tables.keys, Key: { key_hash: keyHash }, ConsistentRead: true }),
    );
    const branchId = key?.branch_id as string;
    const keyId = key?.key_id as string;
    const window = Math.floor(Date.now() / 1000);
    const [data] = await Promise.all([
      read(path, branchId),
      client.send(
        new UpdateCommand({
          TableName: tables.rateLimits,
          Key: { pk: `${keyId}#${window}` },
          UpdateExpression: 'ADD #count :one SET #expires = :expires',
          ExpressionAttributeNames: { '#count': 'count', '#expires': 'expires_at_epoch' },
          ExpressionAttributeValues: { ':one': 1, ':expires': window + 2 },
          ReturnValues: 'UPDATED_NEW',
        }),
      ),
    ]);
    const timestamp = new Date().toISOString();
    const shard = usageShardOf(requestId);
    await client.send(
      new PutCommand({
        TableName: tables.usage,
        Item: {
          key_id: keyId,
          branch_id: branchId,
          method: 'GET',
          path: rawPath,
          route: path,
          status: 200,
          response_time_ms: responseTimeMs(startedAt),
          timestamp,
          request_id: requestId,
          source_ip: sourceIp,
          pk: `${branchId}#${shard}`,
          sk: `${timestamp}#${requestId}`,
          expires_at_epoch: Math.floor(Date.now() / 1000) + 90 * 86_400,
        },
      }),
    );
    return JSON.stringify(data);
  };
};
