import { DynamoRepository } from '../dynamodb';

/**
 * Fixed-window call counters shared by every container (docs/decisions.md "Rate limits"): one
 * item per key and window, `<key_id>#<window start, epoch seconds>`, that DynamoDB TTL removes
 * once the window is over.
 */
export class RateLimitsRepository extends DynamoRepository {
  /**
   * Counts `by` calls in the window (1, or a leased block: shared/api/middlewares/rate-limit-lease.ts)
   * and returns the window's count, these included. One UpdateItem.
   */
  async increment(keyId: string, windowStartEpoch: number, windowSeconds: number, by = 1): Promise<number> {
    const { Attributes } = await this.updateItem({
      Key: { pk: `${keyId}#${windowStartEpoch}` },
      UpdateExpression: 'ADD #count :one SET #expires = :expires',
      ExpressionAttributeNames: { '#count': 'count', '#expires': 'expires_at_epoch' },
      // TTL deletion runs late (up to days); the window key makes an old item harmless anyway.
      ExpressionAttributeValues: { ':one': by, ':expires': windowStartEpoch + 2 * windowSeconds },
      ReturnValues: 'UPDATED_NEW',
    });
    return Number(Attributes?.count);
  }
}
