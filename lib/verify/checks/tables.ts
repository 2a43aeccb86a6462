/**
 * Tables against their one definition (shared/data/tables.ts): key schema, the indexes and
 * projections the code queries, the TTL attribute the code writes, the stream the aggregator
 * reads, on-demand billing, point-in-time recovery and retention. A table added to the
 * definitions is checked with no change here.
 */
import { EPHEMERAL_TABLES } from '../../infra/data-tables';
import { tableDefinitions, type AttributeDefinition, type TableDefinition } from '../../../shared/data/tables';
import type { Json } from '../assembly';
import { asList, defect, resourcesOf, targetOf, type CheckContext, type TemplateCheck } from './table';

/** The template's table for a definition: the one functions are told about, else by construct id. */
export const tableOf = (context: CheckContext, definition: TableDefinition): [string, Json] | undefined => {
  const { resources } = context.assembly;
  for (const [, fn] of resourcesOf(context.assembly, 'AWS::Lambda::Function')) {
    const id = targetOf(fn.Environment?.Variables?.[definition.envVar]);
    if (id && resources[id]?.Type === 'AWS::DynamoDB::Table') return [id, resources[id]];
  }
  const byId = Object.entries(resources).find(
    ([id, resource]) =>
      resource?.Type === 'AWS::DynamoDB::Table' && new RegExp(`^Tables${definition.id}[0-9A-F]{8}$`).test(id),
  );
  return byId ? [byId[0], byId[1] as Json] : undefined;
};

const showKey = (partition: AttributeDefinition, sort?: AttributeDefinition) =>
  `${partition.name} (${partition.type})${sort ? ` + ${sort.name} (${sort.type})` : ''}`;

const templateKey = (schema: unknown, attributes: Json[]) => {
  const types = new Map(attributes.map((a) => [String(a.AttributeName), String(a.AttributeType)]));
  const part = (kind: string) => {
    const name = asList<Json>(schema as Json[]).find((key) => key.KeyType === kind)?.AttributeName as
      string | undefined;
    return name ? `${name} (${types.get(name) ?? '?'})` : undefined;
  };
  const [hash, range] = [part('HASH'), part('RANGE')];
  return `${hash ?? 'none'}${range ? ` + ${range}` : ''}`;
};

/** A check of each defined table: `problem` returns what is wrong with its resource, if anything. */
const tableCheck = (
  name: string,
  description: string,
  problem: (definition: TableDefinition, resource: Json, context: CheckContext) => string | undefined,
): TemplateCheck => ({
  name,
  description,
  run: (context) =>
    tableDefinitions.flatMap((definition: TableDefinition) => {
      const found = tableOf(context, definition);
      if (!found)
        return name === 'table-key-schema'
          ? [defect(context.assembly.stack, `no table for the ${definition.name} definition`)]
          : [];
      const reason = problem(definition, found[1], context);
      return reason ? [defect(found[0], `${definition.name} table: ${reason}`)] : [];
    }),
});

const ephemeral = (definition: TableDefinition) => (EPHEMERAL_TABLES as readonly string[]).includes(definition.name);

export const tableChecks: readonly TemplateCheck[] = [
  tableCheck('table-key-schema', 'key schema and attribute types as defined', (definition, { Properties: p = {} }) => {
    const expected = showKey(definition.partitionKey, definition.sortKey);
    const actual = templateKey(p.KeySchema, asList(p.AttributeDefinitions));
    return actual === expected ? undefined : `key ${actual}, the code reads and writes ${expected}`;
  }),
  tableCheck(
    'table-indexes',
    'the indexes the code queries, with their keys and ALL projected (and no other)',
    (definition, { Properties: p = {} }) => {
      const indexes = new Map(asList<Json>(p.GlobalSecondaryIndexes).map((index) => [String(index.IndexName), index]));
      for (const index of definition.indexes) {
        const actual = indexes.get(index.indexName);
        if (!actual) return `no index ${index.indexName}, which the code queries`;
        const key = templateKey(actual.KeySchema, asList(p.AttributeDefinitions));
        if (key !== showKey(index.partitionKey, index.sortKey))
          return `index ${index.indexName} has key ${key}, expected ${showKey(index.partitionKey, index.sortKey)}`;
        if (actual.Projection?.ProjectionType !== 'ALL')
          return `index ${index.indexName} projects ${actual.Projection?.ProjectionType ?? 'nothing'}, the code reads whole items from it (ALL)`;
      }
      const extra = [...indexes.keys()].filter((name) => !definition.indexes.some((index) => index.indexName === name));
      return extra.length ? `index ${extra.join(', ')} is not in shared/data/tables.ts` : undefined;
    },
  ),
  tableCheck('table-ttl', 'TTL on the attribute the code writes (or none)', (definition, { Properties: p = {} }) => {
    const ttl = p.TimeToLiveSpecification as Json | undefined;
    const expected = definition.timeToLiveAttribute;
    if (!expected) return ttl?.Enabled ? `TTL on ${ttl.AttributeName}, which the code never writes` : undefined;
    if (!ttl || ttl.Enabled !== true) return `no TTL: items the code writes with ${expected} would never expire`;
    return ttl.AttributeName === expected ? undefined : `TTL on ${ttl.AttributeName}, the code writes ${expected}`;
  }),
  tableCheck(
    'table-stream',
    'a stream where the definition has one, with the view it names',
    (definition, { Properties: p = {} }) => {
      const view = p.StreamSpecification?.StreamViewType as string | undefined;
      if (view === definition.stream) return undefined;
      return definition.stream
        ? `stream ${view ?? 'off'}, expected ${definition.stream}`
        : `a ${view} stream the definition does not have`;
    },
  ),
  tableCheck('table-billing', 'on-demand billing (PAY_PER_REQUEST)', (_definition, { Properties: p = {} }) =>
    p.BillingMode === 'PAY_PER_REQUEST'
      ? undefined
      : `billing ${p.BillingMode ?? 'PROVISIONED (the default)'}, expected PAY_PER_REQUEST`,
  ),
  tableCheck(
    'table-point-in-time-recovery',
    'point-in-time recovery on every table that holds what cannot be rebuilt',
    (definition, { Properties: p = {} }) =>
      ephemeral(definition) || p.PointInTimeRecoverySpecification?.PointInTimeRecoveryEnabled === true
        ? undefined
        : 'point-in-time recovery is off',
  ),
  tableCheck(
    'table-retention',
    'retained with the stack deleted, and deletion-protected (unless the stack says `destroyData`)',
    (definition, resource, context) => {
      if (ephemeral(definition) || context.assembly.metadata.BranchApi?.destroyData === true) return undefined;
      if (resource.DeletionPolicy !== 'Retain')
        return `deletion policy ${resource.DeletionPolicy ?? 'Delete (the default)'}, expected Retain`;
      return resource.Properties?.DeletionProtectionEnabled === true ? undefined : 'deletion protection is off';
    },
  ),
];
