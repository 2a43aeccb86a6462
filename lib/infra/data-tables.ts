/**
 * The DynamoDB tables, built from the shared definitions (shared/tables.ts) that the local
 * bootstrap uses too: on-demand, encrypted with the AWS managed key, every index projecting all
 * attributes (as the local tables do). Keys and branch data are the source of truth: point-in-time
 * recovery, deletion protection, and kept when the stack is deleted, unless `destroyData` is set.
 */
import { RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import { Construct } from 'constructs';
import {
  branchDataTable,
  keysTable,
  rateLimitsTable,
  usageTable,
  type AttributeDefinition,
  type TableDefinition,
} from '../../shared/tables';
import type { ApiTables } from './api-function';

export interface DataTablesProps {
  /**
   * Delete the keys and branch-data tables with the stack, and drop their deletion protection.
   * Only for throwaway stages: a deleted keys table invalidates every key ever issued.
   * @default false (retained, deletion-protected)
   */
  readonly destroyData?: boolean;
}

const attribute = ({ name, type }: AttributeDefinition): dynamodb.Attribute => ({
  name,
  type: type === 'S' ? dynamodb.AttributeType.STRING : dynamodb.AttributeType.NUMBER,
});

export class DataTables extends Construct implements ApiTables {
  readonly keys: dynamodb.Table;
  readonly usage: dynamodb.Table;
  readonly branchData: dynamodb.Table;
  readonly rateLimits: dynamodb.Table;

  constructor(scope: Construct, id: string, props: DataTablesProps = {}) {
    super(scope, id);
    const retain = !props.destroyData;

    this.keys = this.table(keysTable, { durable: true, retain });
    this.branchData = this.table(branchDataTable, { durable: true, retain });
    // Usage records are a log that expires through TTL: they go with the stack, and carry no
    // point-in-time recovery (the write-heaviest table, whose loss never affects serving).
    this.usage = this.table(usageTable, { durable: false, retain: false });
    Validations.of(this.usage).acknowledge({
      id: 'AwsSolutions-DDB3',
      reason:
        'Usage records are an append-only access log that DynamoDB TTL expires after the retention period; ' +
        'losing them never affects serving, and a record that failed to be written is in the error log for replay.',
    });
    // Rate-limit counters live for one window: nothing to recover.
    this.rateLimits = this.table(rateLimitsTable, { durable: false, retain: false });
    Validations.of(this.rateLimits).acknowledge({
      id: 'AwsSolutions-DDB3',
      reason: 'Rate-limit counters only matter for the current window and expire through TTL; nothing to recover.',
    });
  }

  private table(definition: TableDefinition, { durable, retain }: { durable: boolean; retain: boolean }) {
    const table = new dynamodb.Table(this, definition.id, {
      partitionKey: attribute(definition.partitionKey),
      ...(definition.sortKey ? { sortKey: attribute(definition.sortKey) } : {}),
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      encryption: dynamodb.TableEncryption.AWS_MANAGED,
      ...(definition.timeToLiveAttribute ? { timeToLiveAttribute: definition.timeToLiveAttribute } : {}),
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: durable },
      deletionProtection: durable && retain,
      removalPolicy: retain ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    });
    for (const index of definition.indexes) {
      table.addGlobalSecondaryIndex({
        indexName: index.indexName,
        partitionKey: attribute(index.partitionKey),
        ...(index.sortKey ? { sortKey: attribute(index.sortKey) } : {}),
        projectionType: dynamodb.ProjectionType.ALL,
      });
    }
    return table;
  }
}
