/**
 * The demo key `npm start` prints: one per start, read-only, expiring after a day, and the only
 * active one of its kind. With `--data-dir` (or an external DynamoDB) the keys of earlier starts
 * are still stored, so they are revoked here rather than left to pile up, valid forever. See
 * docs/decisions.md, "Local run".
 */
import type { OperatorContext } from '../operator/context';
import { createKey, revokeKey } from '../operator/keys';

/** Every demo key's name starts with this; nothing else names a key so. */
export const DEMO_KEY_NAME_PREFIX = 'demo key (npm start';

/** How long a demo key stays valid. */
export const DEMO_KEY_LIFETIME_MS = 24 * 60 * 60 * 1000;

export const createDemoKey = async (operator: OperatorContext, branchId: string, now = new Date()) => {
  const earlier = (await operator.keys.listByBranch(branchId)).filter(
    (record) => record.name.startsWith(DEMO_KEY_NAME_PREFIX) && !record.revoked_at,
  );
  for (const record of earlier) await revokeKey(operator, { branchId, keyId: record.key_id });
  const { key, record } = await createKey(operator, {
    branchId,
    scopes: ['read'],
    name: `${DEMO_KEY_NAME_PREFIX} ${now.toISOString()})`,
    expiresAt: new Date(now.getTime() + DEMO_KEY_LIFETIME_MS),
    now,
  });
  return { key, keyId: record.key_id, expiresAt: record.expires_at!, revokedKeyIds: earlier.map((r) => r.key_id) };
};
