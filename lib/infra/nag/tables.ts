/**
 * Tables against their one definition (shared/data/tables.ts): key schema, the indexes and
 * projections the code queries, the TTL attribute the code writes, the stream the consumers read,
 * on-demand billing, point-in-time recovery and retention. A table added to the definitions is
 * judged with no change here; one that needs neither recovery nor retention acknowledges it.
 */
import { CfnDeletionPolicy } from 'aws-cdk-lib';
import { CfnTable } from 'aws-cdk-lib/aws-dynamodb';
import { NagRuleCompliance } from 'cdk-nag';
import { tableDefinitions, type AttributeDefinition, type TableDefinition } from '../../../shared/data/tables';
import { asList, idOf, isVerdict, read, rule, type Json } from './rule';

/** The definition a table of the template is built from, by its construct id (`Tables<Id>`). */
export const definitionOf = (table: CfnTable): TableDefinition | undefined =>
  tableDefinitions.find((definition) => new RegExp(`^Tables${definition.id}[0-9A-F]{8}$`).test(idOf(table)));

const showKey = (partition: AttributeDefinition, sort?: AttributeDefinition) =>
  `${partition.name} (${partition.type})${sort ? ` + ${sort.name} (${sort.type})` : ''}`;

const templateKey = (table: CfnTable, schema: unknown) => {
  const types = new Map(
    asList<Json>(read(table, table.attributeDefinitions)).map((a) => [a.attributeName, a.attributeType]),
  );
  const part = (kind: string) => {
    const name = asList<Json>(read(table, schema)).find((key) => key.keyType === kind)?.attributeName as
      string | undefined;
    return name ? `${name} (${types.get(name) ?? '?'})` : undefined;
  };
  return `${part('HASH') ?? 'none'}${part('RANGE') ? ` + ${part('RANGE')}` : ''}`;
};

/** A rule on each defined table: `problem` says what is wrong with it, prefixed with the table's name. */
const tableRule = (
  name: string,
  explanation: string,
  problem: (table: CfnTable, definition: TableDefinition) => string | NagRuleCompliance | undefined,
  info?: string,
) =>
  rule(
    CfnTable,
    name,
    explanation,
    (table) => {
      const definition = definitionOf(table);
      const found = definition && problem(table, definition);
      return typeof found === 'string' && !isVerdict(found) ? `${definition!.name} table: ${found}` : found;
    },
    info,
  );

export const tableRules = [
  rule(CfnTable, 'table-key-schema', 'key schema and attribute types as defined', (table) => {
    const definition = definitionOf(table);
    if (!definition) return 'not a table of shared/data/tables.ts';
    const expected = showKey(definition.partitionKey, definition.sortKey);
    const actual = templateKey(table, table.keySchema);
    return actual === expected
      ? undefined
      : `${definition.name} table: key ${actual}, the code reads and writes ${expected}`;
  }),
  tableRule(
    'table-indexes',
    'the indexes the code queries, with their keys and projection (and no other)',
    (table, definition) => {
      const indexes = new Map(
        asList<Json>(read(table, table.globalSecondaryIndexes)).map((index) => [index.indexName, index]),
      );
      for (const index of definition.indexes) {
        const actual = indexes.get(index.indexName);
        if (!actual) return `no index ${index.indexName}, which the code queries`;
        const key = templateKey(table, actual.keySchema);
        if (key !== showKey(index.partitionKey, index.sortKey))
          return `index ${index.indexName} has key ${key}, expected ${showKey(index.partitionKey, index.sortKey)}`;
        const projection = index.projection ?? 'ALL';
        if (actual.projection?.projectionType !== projection)
          return `index ${index.indexName} projects ${actual.projection?.projectionType ?? 'nothing'}, the code reads ${projection} from it`;
      }
      const extra = [...indexes.keys()].filter((name) => !definition.indexes.some((index) => index.indexName === name));
      return extra.length ? `index ${extra.join(', ')} is not in shared/data/tables.ts` : undefined;
    },
  ),
  tableRule('table-ttl', 'TTL on the attribute the code writes (or none)', (table, definition) => {
    const ttl = read(table, table.timeToLiveSpecification);
    const expected = definition.timeToLiveAttribute;
    if (!expected) return ttl?.enabled ? `TTL on ${ttl.attributeName}, which the code never writes` : undefined;
    if (ttl?.enabled !== true) return `no TTL: items the code writes with ${expected} would never expire`;
    return ttl.attributeName === expected ? undefined : `TTL on ${ttl.attributeName}, the code writes ${expected}`;
  }),
  tableRule('table-stream', 'a stream where the definition has one, with the view it names', (table, definition) => {
    const view = read(table, table.streamSpecification)?.streamViewType as string | undefined;
    if (view === definition.stream) return undefined;
    return definition.stream
      ? `stream ${view ?? 'off'}, expected ${definition.stream}`
      : `a ${view} stream the definition does not have`;
  }),
  tableRule('table-billing', 'on-demand billing (PAY_PER_REQUEST)', (table) =>
    read(table, table.billingMode) === 'PAY_PER_REQUEST'
      ? undefined
      : `billing ${read(table, table.billingMode) ?? 'PROVISIONED (the default)'}, expected PAY_PER_REQUEST`,
  ),
  tableRule(
    'table-point-in-time-recovery',
    'point-in-time recovery on every table (one holding nothing to recover acknowledges it)',
    (table) =>
      read(table, table.pointInTimeRecoverySpecification)?.pointInTimeRecoveryEnabled === true
        ? undefined
        : NagRuleCompliance.NON_COMPLIANT,
    'point-in-time recovery is off',
  ),
  tableRule(
    'table-retention',
    'retained with the stack deleted, and deletion-protected (a throwaway stage, `destroyData`, acknowledges it)',
    (table) =>
      table.cfnOptions.deletionPolicy === CfnDeletionPolicy.RETAIN &&
      read(table, table.deletionProtectionEnabled) === true
        ? undefined
        : NagRuleCompliance.NON_COMPLIANT,
    'deleted with the stack, or not deletion-protected',
  ),
];
