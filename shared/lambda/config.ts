/**
 * The API functions' configuration, read once from the environment at start-up
 * (shared/config/env.ts holds the readers).
 */
import type { RateLimit } from '../domain/rate-limit';
import type { ApiTableNames } from '../data/tables';
import type { KeyEventSettings } from '../data/key-events';
import {
  readDefaultRateLimit,
  readDynamoDbSettings,
  readKeyEventSettings,
  readTableNames,
  readUsageRetentionDays,
  type DynamoDbSettings,
} from '../config/env';

export interface Config {
  readonly tables: ApiTableNames;
  readonly dynamodb: DynamoDbSettings;
  readonly usageRetentionDays: number;
  /** The limit of keys stored without one (docs/decisions.md "Rate limits"). */
  readonly defaultRateLimit: RateLimit;
  /** Where key events go (docs/decisions.md "Key events"): the bus deployed, a file locally, or nowhere. */
  readonly keyEvents: KeyEventSettings;
}

type Env = Record<string, string | undefined>;

export const loadConfig = (env: Env = process.env): Config => ({
  tables: readTableNames(env),
  dynamodb: readDynamoDbSettings(env),
  usageRetentionDays: readUsageRetentionDays(env),
  defaultRateLimit: readDefaultRateLimit(env),
  keyEvents: readKeyEventSettings(env),
});
