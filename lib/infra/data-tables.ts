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
import { tableDefinitions, type AttributeDefinition, type TableDefinition } from '../../shared/data/tables';
import type { ApiTables } from './api-function';

/**
 * Tables that hold nothing to recover or keep (rate-limit counters live for one window): no
 * point-in-time recovery, destroyed with the stack. Every other table is retained and protected.
 */
export const EPHEMERAL_TABLES: readonly (keyof ApiTables)[] = ['rateLimits'];

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

/** One table per definition of shared/data/tables.ts: a definition added there is a table here. */
export class DataTables extends Construct implements ApiTables {
  // Assigned from the definitions in the constructor.
  readonly keys!: dynamodb.Table;
  readonly usage!: dynamodb.Table;
  readonly branchData!: dynamodb.Table;
  /** Usage rollups: derived from the usage table's stream, rebuildable from it (docs/usage-rollups.md). */
  readonly rollups!: dynamodb.Table;
  readonly rateLimits!: dynamodb.Table;
  /** Key activity: the audit log of key actions, written by the operator tooling only. */
  readonly activity!: dynamodb.Table;

  constructor(scope: Construct, id: string, props: DataTablesProps = {}) {
    super(scope, id);
    const retain = !props.destroyData;
    const tables = tableDefinitions.map((definition) => {
      const ephemeral = EPHEMERAL_TABLES.includes(definition.name);
      const table = this.table(definition, retain && !ephemeral, !ephemeral);
      if (ephemeral) {
        const reason = `The ${definition.name} table only matters for the current window and expires through TTL; nothing to recover or keep.`;
        for (const id of ['AwsSolutions-DDB3', 'BranchApi-table-point-in-time-recovery', 'BranchApi-table-retention'])
          Validations.of(table).acknowledge({ id, reason });
      } else if (!retain) {
        Validations.of(table).acknowledge({
          id: 'BranchApi-table-retention',
          reason:
            'destroyData: a throwaway stage, whose tables are deleted with its stack (docs/deploy.md "Teardown").',
        });
      }
      return [definition.name, table] as const;
    });
    Object.assign(this, Object.fromEntries(tables));
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
        projectionType: dynamodb.ProjectionType[index.projection ?? 'ALL'],
      });
    }
    return table;
  }
}
