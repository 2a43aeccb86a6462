/**
 * The DynamoDB tables, built from the shared definitions (shared/data/tables.ts) that the local
 * bootstrap uses too: on-demand, encrypted with the AWS managed key, every index projecting all
 * attributes (as the local tables do). Every table has point-in-time recovery, deletion protection,
 * and is kept when the stack is deleted, unless `destroyData` is set: keys and branch data are the
 * source of truth, and the usage table is the only record of who called with which key, which no
 * one can rebuild once it is lost (docs/deploy.md, "Teardown").
 */
import { RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import { Construct } from 'constructs';
import {
  activityTable,
  branchDataTable,
  keysTable,
  rollupsTable,
  rateLimitsTable,
  usageTable,
  type AttributeDefinition,
  type TableDefinition,
} from '../../shared/data/tables';
import type { ApiTables } from './api-function';

export interface DataTablesProps {
  /**
   * Delete the tables with the stack, and drop their deletion protection.
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
  /** Usage rollups: derived from the usage table's stream, rebuildable from it (docs/usage-rollups.md). */
  readonly rollups: dynamodb.Table;
  readonly rateLimits: dynamodb.Table;
  /** Key activity: the audit log of key actions, written by the operator tooling only. */
  readonly activity: dynamodb.Table;

  constructor(scope: Construct, id: string, props: DataTablesProps = {}) {
    super(scope, id);
    const retain = !props.destroyData;

    this.keys = this.table(keysTable, retain);
    this.usage = this.table(usageTable, retain);
    this.branchData = this.table(branchDataTable, retain);
    this.rollups = this.table(rollupsTable, retain);
    this.activity = this.table(activityTable, retain);
    // Rate-limit counters live for one window and expire through TTL: nothing to recover or keep.
    this.rateLimits = this.table(rateLimitsTable, false, false);
    Validations.of(this.rateLimits).acknowledge({
      id: 'AwsSolutions-DDB3',
      reason: 'Rate-limit counters only matter for the current window and expire through TTL; nothing to recover.',
    });
  }

  /** @param recover point-in-time recovery, for every table that holds what could not be rebuilt */
  private table(definition: TableDefinition, retain: boolean, recover = true) {
    const table = new dynamodb.Table(this, definition.id, {
      partitionKey: attribute(definition.partitionKey),
      ...(definition.sortKey ? { sortKey: attribute(definition.sortKey) } : {}),
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      encryption: dynamodb.TableEncryption.AWS_MANAGED,
      ...(definition.timeToLiveAttribute ? { timeToLiveAttribute: definition.timeToLiveAttribute } : {}),
      ...(definition.stream === 'NEW_IMAGE' ? { stream: dynamodb.StreamViewType.NEW_IMAGE } : {}),
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: recover },
      deletionProtection: retain,
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
