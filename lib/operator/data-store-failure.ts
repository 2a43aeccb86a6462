/**
 * A DynamoDB failure in words for the operator: the table with the setting that names it, a denied
 * action with where the operator's policy is, an unreachable DynamoDB with what to check. The CLI's
 * errors and the key actions' pending notices (lib/operator/keys.ts) say it alike.
 */
import { DataStoreError, DataStoreUnavailableError } from '../../shared/data/data-store-errors';
import { OPERATOR_TABLES, operatorTableOutput, tableDefinitions, type TableNames } from '../../shared/data/tables';

/** What the operator tools talk to (lib/operator/context.ts): the tables' names, and a local endpoint or a region. */
export interface DataStoreTarget {
  tables: TableNames;
  endpoint?: string | undefined;
  region?: string | undefined;
}

/** The table's variable and stack output, from the names the target gives the tables. */
const tableSetting = (table: string, tables: TableNames): string => {
  const definition = tableDefinitions.find(({ name }) => tables[name] === table);
  if (!definition) return '';
  const operated = (OPERATOR_TABLES as readonly string[]).includes(definition.name);
  return ` (${definition.envVar}${operated ? `, stack output ${operatorTableOutput(definition.name as (typeof OPERATOR_TABLES)[number])}` : ''})`;
};

/**
 * What DynamoDB refused, named: a missing table with the setting that names it and the options that
 * set it, a denied action with its table and where the operator's policy is; otherwise the error
 * and its table.
 */
const refusalMessage = (error: DataStoreError, tables: TableNames): string => {
  const cause = (error.cause as { name?: string } | undefined)?.name;
  const operation = error.operation ?? 'the request';
  const table = error.table === undefined ? undefined : `${error.table}${tableSetting(error.table, tables)}`;
  if (cause === 'ResourceNotFoundException' && table) {
    return (
      `DynamoDB ${operation}: no table ${table}. Point the CLI at the deployed stack: ` +
      '--stack <stack name> (or --outputs <file of cdk deploy --outputs-file>), or set the variable from its output'
    );
  }
  if (cause === 'AccessDeniedException' && table) {
    return (
      `DynamoDB denied dynamodb:${operation} on table ${table} to your AWS identity: ` +
      'its IAM policy needs the operator grants (docs/deploy.md "Operator permissions")'
    );
  }
  return `DynamoDB refused the request${table ? ` on table ${table}` : ''}: ${error.message}`;
};

/** An unreachable DynamoDB: the local endpoint to check, or the deployed target's region, network and credentials. */
const unavailableMessage = ({ endpoint, region }: Omit<DataStoreTarget, 'tables'>): string => {
  if (endpoint) return 'DynamoDB is not reachable (is DYNAMODB_ENDPOINT right, is the local stack running?)';
  return (
    `DynamoDB${region ? ` in ${region}` : ''} is not reachable (is the region right, ` +
    'can this machine reach AWS, and are your AWS credentials valid and not expired?)'
  );
};

/** Any error of a data access, in words: DynamoDB's named as above, any other by its message. */
export const dataStoreFailureMessage = (error: unknown, target: DataStoreTarget): string => {
  if (error instanceof DataStoreUnavailableError) return unavailableMessage(target);
  if (error instanceof DataStoreError) return refusalMessage(error, target.tables);
  return error instanceof Error ? error.message : String(error);
};
