/**
 * The API functions' configuration, read once from the environment at start-up
 * (shared/config/env.ts holds the readers).
 */
import {
  readDefaultRateLimit,
  readDynamoDbSettings,
  readKeyEventSettings,
  readTableNames,
  readUsageRetentionDays,
} from '../config/env';

export const loadConfig = (env: Record<string, string | undefined> = process.env) => ({
  tables: readTableNames(env),
  dynamodb: readDynamoDbSettings(env),
  usageRetentionDays: readUsageRetentionDays(env),
  /** The limit of keys stored without one (docs/decisions.md "Rate limits"). */
  defaultRateLimit: readDefaultRateLimit(env),
  /** Where key events go (docs/decisions.md "Key events"): the bus deployed, a file locally, or nowhere. */
  keyEvents: readKeyEventSettings(env),
});
