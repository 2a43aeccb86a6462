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
}

export interface TableDefinition {
  /** Stable id: the CDK construct id, and the suffix of local table names. */
  readonly id: 'Keys' | 'Usage' | 'BranchData';
  readonly partitionKey: AttributeDefinition;
  readonly sortKey?: AttributeDefinition;
  readonly indexes: readonly IndexDefinition[];
  /** Attribute holding an epoch-seconds expiry, enforced by DynamoDB TTL. */
  readonly timeToLiveAttribute?: string;
}

export const KEYS_BY_BRANCH_INDEX = 'by-branch';
export const KEYS_BY_ID_INDEX = 'by-key-id';
export const USAGE_BY_KEY_INDEX = 'by-key';
export const ACTIVE_PROVIDERS_INDEX = 'active-providers';

/** API keys, looked up by the SHA-256 of the key value. */
export const keysTable: TableDefinition = {
  id: 'Keys',
  partitionKey: { name: 'key_hash', type: 'S' },
  indexes: [
    {
      indexName: KEYS_BY_BRANCH_INDEX,
      partitionKey: { name: 'branch_id', type: 'S' },
      sortKey: { name: 'created_at', type: 'S' },
    },
    { indexName: KEYS_BY_ID_INDEX, partitionKey: { name: 'key_id', type: 'S' } },
  ],
};

/** One record per call: by branch, newest first through the sort key `<timestamp>#<request id>`. */
export const usageTable: TableDefinition = {
  id: 'Usage',
  partitionKey: { name: 'branch_id', type: 'S' },
  sortKey: { name: 'sk', type: 'S' },
  indexes: [
    {
      indexName: USAGE_BY_KEY_INDEX,
      partitionKey: { name: 'key_id', type: 'S' },
      sortKey: { name: 'sk', type: 'S' },
    },
  ],
  timeToLiveAttribute: 'expires_at_epoch',
};

/**
 * Branch, members and payment providers of every branch, partitioned by branch id. The sparse
 * index holds only active providers (only they carry `active_provider_id`), so listing them is
 * one exact Query with no filter and no short pages.
 */
export const branchDataTable: TableDefinition = {
  id: 'BranchData',
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

export const tableDefinitions = [keysTable, usageTable, branchDataTable] as const;

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
            Projection: { ProjectionType: 'ALL' as const },
          })),
        }
      : {}),
  };
};
