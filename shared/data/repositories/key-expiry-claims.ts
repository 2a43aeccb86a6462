/**
 * "Key Expiring" claims on key items (docs/decisions.md "Key events"): once per key and expiry,
 * shared by the daily scheduled function and `keys audit` (shared/lambda/key-expiry.ts). A claim
 * is not a key action: no version, no activity entry.
 */
import type { ApiKeyRecord } from '../../domain/key-record';
import { DynamoRepository } from '../dynamodb';
import { KeyReader, toRecord, type StoredKey } from './key-reader';

export class KeyExpiryClaims extends DynamoRepository {
  private readonly reader = new KeyReader(this.client, this.tableName);

  /**
   * Keys not revoked whose expiry falls between `now` and `until` and whose `Key Expiring` event
   * has not been claimed for that expiry. A Scan: run by the daily scheduled function only, never
   * on a request path.
   */
  async listExpiring(now: Date, until: Date): Promise<ApiKeyRecord[]> {
    const found = await this.scanItems<StoredKey>({
      FilterExpression:
        'expires_at BETWEEN :now AND :until AND attribute_not_exists(revoked_at)' +
        ' AND (attribute_not_exists(expiring_event_for) OR expiring_event_for <> expires_at)',
      ExpressionAttributeValues: { ':now': now.toISOString(), ':until': until.toISOString() },
    });
    return found.map(toRecord);
  }

  /**
   * Claims the `Key Expiring` event of a key's current expiry: true for the one caller that gets to
   * send it, false when it was claimed already or the expiry changed (an edited expiry gets its own).
   */
  async claimExpiringEvent(keyId: string, expiresAt: string): Promise<boolean> {
    const stored = await this.reader.findById(keyId);
    if (!stored || stored.expires_at !== expiresAt || stored.expiring_event_for === expiresAt) return false;
    return this.ifConditionMet(
      this.updateItem({
        Key: { key_hash: stored.key_hash },
        UpdateExpression: 'SET expiring_event_for = :expires',
        ConditionExpression:
          'expires_at = :expires AND (attribute_not_exists(expiring_event_for) OR expiring_event_for <> :expires)',
        ExpressionAttributeValues: { ':expires': expiresAt },
      }),
    );
  }
}
