/**
 * The one definition of each DynamoDB table. The CDK stack and the local bootstrap both build
 * their tables from these, so the two can never disagree on keys or indexes.
 */
import type { CreateTableCommandInput } from '@aws-sdk/client-dynamodb';

export interface AttributeDefinition {
  readonly name: string;
  readonly type: 'S' | 'N';
}

export interface IndexDefinition {
  readonly indexName: string;
  readonly partitionKey: AttributeDefinition;
  readonly sortKey?: AttributeDefinition;
  /**
   * What each entry holds besides the keys. KEYS_ONLY: an update that leaves the keys alone writes
   * nothing to the index (docs/decisions.md "Cost"). @default 'ALL'
   */
  readonly projection?: 'ALL' | 'KEYS_ONLY';
}

/** The name of each table in a deployment (a CDK stack output each) or on a local DynamoDB. */
export type TableNames = {
  readonly [name in 'keys' | 'usage' | 'branchData' | 'rollups' | 'rateLimits' | 'activity']: string;
};

/** The stack output of a table the operator tooling names, e.g. `KeysTableName`. */
export const operatorTableOutput = (name: keyof TableNames): string =>
  `${name.charAt(0).toUpperCase()}${name.slice(1)}TableName`;

/** The tables the API functions use (the rollups and activity tables are not among them). */
export const API_TABLES = ['keys', 'usage', 'branchData', 'rateLimits'] as const;
export type ApiTableNames = Pick<TableNames, (typeof API_TABLES)[number]>;

export interface TableDefinition {
  /** Stable id: the CDK construct id. */
  readonly id: 'Keys' | 'Usage' | 'BranchData' | 'UsageRollups' | 'RateLimits' | 'KeyActivity';
  /** Its field in TableNames. */
  readonly name: keyof TableNames;
  /** The environment variable that carries its name to functions and the operator tooling. */
  readonly envVar: string;
  /** Its name on a local DynamoDB (`npm start`, the CLI's default). */
  readonly localName: string;
  readonly partitionKey: AttributeDefinition;
  readonly sortKey?: AttributeDefinition;
  readonly indexes: readonly IndexDefinition[];
  /** Attribute holding an epoch-seconds expiry, enforced by DynamoDB TTL. */
  readonly timeToLiveAttribute?: string;
  /** What the table's DynamoDB stream carries (deployed); absent: no stream. */
  readonly stream?: 'NEW_IMAGE';
}

export const KEYS_BY_BRANCH_INDEX = 'by-branch';
export const KEYS_BY_ID_INDEX = 'by-key-id';
/** The per-key index of the rollups and activity tables (`timeOrdered`). */
export const BY_KEY_INDEX = 'by-key';
export const ACTIVE_PROVIDERS_INDEX = 'active-providers';

/** API keys, looked up by the SHA-256 of the key value. */
export const keysTable: TableDefinition = {
  id: 'Keys',
  name: 'keys',
  envVar: 'KEYS_TABLE',
  localName: 'branch-api-keys',
  partitionKey: { name: 'key_hash', type: 'S' },
  indexes: [
    {
      indexName: KEYS_BY_BRANCH_INDEX,
      partitionKey: { name: 'branch_id', type: 'S' },
      sortKey: { name: 'created_at', type: 'S' },
    },
    { indexName: KEYS_BY_ID_INDEX, partitionKey: { name: 'key_id', type: 'S' } },
  ],
  // Finishes key actions a crashed function left pending (docs/decisions.md "Key events").
  stream: 'NEW_IMAGE',
};

export const ROLLUPS_BY_KEY_INDEX = BY_KEY_INDEX;

/**
 * The layout of the rollups and activity tables: items of a partition (`partition`) in time order
 * under `sk`, the same items by key through the `by-key` index (`keyPartition`).
 */
const timeOrdered = (partition: string, keyPartition: string, projection: 'ALL' | 'KEYS_ONLY' = 'ALL') =>
  ({
    partitionKey: { name: partition, type: 'S' },
    sortKey: { name: 'sk', type: 'S' },
    indexes: [
      {
        indexName: BY_KEY_INDEX,
        partitionKey: { name: keyPartition, type: 'S' },
        sortKey: { name: 'sk', type: 'S' },
        projection,
      },
    ],
  }) as const satisfies Partial<TableDefinition>;
const expiring = { timeToLiveAttribute: 'expires_at_epoch' } as const satisfies Partial<TableDefinition>;

/**
 * Write shards of the usage table (docs/capacity.md "Per branch"): one partition key takes about
 * 1,000 writes/s and time-ordered sort keys defeat adaptive splitting, so a branch (and a key) writes
 * across this many. Part of the table's key shape, not a setting: changing it moves records.
 */
export const USAGE_WRITE_SHARDS = 16;

/**
 * One record per call, in the partition `<branch_id>#<shard>` (`pk`) under the sort key
 * `<timestamp>#<request id>` (`sk`), expiring by TTL. The shard comes from the request id, so a
 * replayed record lands on its own item. No index: a key's records are its branch's, filtered
 * (docs/decisions.md "Cost").
 */
export const usageTable: TableDefinition = {
  id: 'Usage',
  name: 'usage',
  envVar: 'USAGE_TABLE',
  localName: 'branch-api-usage',
  partitionKey: { name: 'pk', type: 'S' },
  sortKey: { name: 'sk', type: 'S' },
  indexes: [],
  ...expiring,
  // Feeds the rollups aggregator (docs/decisions.md "Usage rollups").
  stream: 'NEW_IMAGE',
};

/**
 * Branch, members and payment providers of every branch, partitioned by branch id. The sparse
 * index holds only active providers (only they carry `active_provider_id`), so listing them is
 * one exact Query with no filter and no short pages.
 */
export const branchDataTable: TableDefinition = {
  id: 'BranchData',
  name: 'branchData',
  envVar: 'BRANCH_DATA_TABLE',
  localName: 'branch-api-branch-data',
  partitionKey: { name: 'branch_id', type: 'S' },
  sortKey: { name: 'sk', type: 'S' },
  indexes: [
    {
      indexName: ACTIVE_PROVIDERS_INDEX,
      partitionKey: { name: 'branch_id', type: 'S' },
      sortKey: { name: 'active_provider_id', type: 'S' },
    },
  ],
};

/**
 * Usage rollups (docs/decisions.md "Usage rollups"): per branch, one item per key and hour
 * (sort key `h#<hour>#<key id>`, so a branch × period is one Query) and one `last#<key id>` item
 * per key holding when it was last used; the index finds one key's items in a period. Keys only:
 * the aggregator's updates leave an item's keys alone, so they write nothing to it (docs/decisions.md "Cost").
 */
export const rollupsTable: TableDefinition = {
  id: 'UsageRollups',
  name: 'rollups',
  envVar: 'ROLLUPS_TABLE',
  localName: 'branch-api-usage-rollups',
  ...timeOrdered('branch_id', 'key_id', 'KEYS_ONLY'),
  ...expiring,
};

/**
 * Per-key call counters, one item per key and fixed window (`<key_id>#<window start epoch>`),
 * removed by TTL after the window (docs/decisions.md "Rate limits").
 */
export const rateLimitsTable: TableDefinition = {
  id: 'RateLimits',
  name: 'rateLimits',
  envVar: 'RATE_LIMITS_TABLE',
  localName: 'branch-api-rate-limits',
  partitionKey: { name: 'pk', type: 'S' },
  indexes: [],
  timeToLiveAttribute: 'expires_at_epoch',
};

export const ACTIVITY_BY_KEY_INDEX = BY_KEY_INDEX;

/**
 * Key activity (docs/decisions.md "Key activity"): one item per key action, by branch, newest first
 * when read backwards; the index serves one key's actions. An audit log: no TTL, kept when the stack
 * is deleted, written by whatever finishes a key action (the operator tooling, the secret scanning
 * report, the keys stream's finisher).
 */
export const activityTable: TableDefinition = {
  id: 'KeyActivity',
  name: 'activity',
  envVar: 'ACTIVITY_TABLE',
  localName: 'branch-api-key-activity',
  ...timeOrdered('branch_id', 'key_id'),
};

export const tableDefinitions = [
  keysTable,
  usageTable,
  branchDataTable,
  rollupsTable,
  rateLimitsTable,
  activityTable,
] as const;

/**
 * The tables the operator tooling (CLI, console, library) names on a deployment, every one: each is a
 * stack output (`operatorTableOutput`) whose value goes in the table's environment variable (`envVar`).
 */
export const OPERATOR_TABLES = tableDefinitions.map(({ name }) => name);

type TableNameMap<T> = { readonly [K in keyof TableNames]: T };
const byName = <T>(pick: (definition: TableDefinition) => T) =>
  Object.fromEntries(tableDefinitions.map((definition) => [definition.name, pick(definition)])) as TableNameMap<T>;

/** Environment variable of each table's name, e.g. `KEYS_TABLE`. */
export const TABLE_ENV = byName((definition) => definition.envVar);
/** Table names on a local DynamoDB. */
export const LOCAL_TABLE_NAMES: TableNames = byName((definition) => definition.localName);

const keySchema = (partitionKey: AttributeDefinition, sortKey?: AttributeDefinition) => [
  { AttributeName: partitionKey.name, KeyType: 'HASH' as const },
  ...(sortKey ? [{ AttributeName: sortKey.name, KeyType: 'RANGE' as const }] : []),
];

/** CreateTable input for a definition (on-demand). TTL is set separately where supported. */
export const createTableInput = (definition: TableDefinition, tableName: string): CreateTableCommandInput => {
  const attributes = new Map<string, AttributeDefinition>();
  for (const attribute of [
    definition.partitionKey,
    definition.sortKey,
    ...definition.indexes.flatMap((index) => [index.partitionKey, index.sortKey]),
  ]) {
    if (attribute) attributes.set(attribute.name, attribute);
  }
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [...attributes.values()].map(({ name, type }) => ({
      AttributeName: name,
      AttributeType: type,
    })),
    KeySchema: keySchema(definition.partitionKey, definition.sortKey),
    ...(definition.indexes.length > 0
      ? {
          GlobalSecondaryIndexes: definition.indexes.map((index) => ({
            IndexName: index.indexName,
            KeySchema: keySchema(index.partitionKey, index.sortKey),
            Projection: { ProjectionType: index.projection ?? 'ALL' },
          })),
        }
      : {}),
  };
};

/**
 * The entry an index holds for an item, as DynamoDB projects it: the whole item (ALL), or the
 * table's and the index's keys (KEYS_ONLY); undefined when the item lacks the index's keys (sparse).
 */
export const indexEntryOf = (
  item: Record<string, unknown>,
  table: Pick<TableDefinition, 'partitionKey' | 'sortKey'>,
  index: IndexDefinition,
): Record<string, unknown> | undefined => {
  const keys = [table.partitionKey, table.sortKey, index.partitionKey, index.sortKey].flatMap((a) =>
    a ? [a.name] : [],
  );
  if ([index.partitionKey, index.sortKey].some((a) => a && item[a.name] === undefined)) return undefined;
  return index.projection === 'KEYS_ONLY' ? Object.fromEntries(keys.map((name) => [name, item[name]])) : item;
};
