/**
 * What each operator command (CLI and console page) may ask of a deployed stack: the DynamoDB
 * actions on which of its tables and indexes, and whether it puts key events on the bus. The
 * operator's IAM policy is generated from it (docs/deploy.md "Operator permissions"), and the
 * verifier enforces that policy while it runs every command offline (lib/verify/operator-proof.ts).
 */
import {
  ACTIVITY_BY_KEY_INDEX,
  KEYS_BY_BRANCH_INDEX,
  KEYS_BY_ID_INDEX,
  OPERATOR_TABLES,
  operatorTableOutput,
  ROLLUPS_BY_KEY_INDEX,
} from '../../shared/data/tables';
import { KEY_EVENT_BUS_OUTPUT } from './target';

type OperatorTable = (typeof OPERATOR_TABLES)[number];
export type DynamoAction =
  'GetItem' | 'PutItem' | 'UpdateItem' | 'DeleteItem' | 'Query' | 'BatchGetItem' | 'BatchWriteItem';

/** Actions on one table, or on one of its indexes. */
export interface TableGrant {
  readonly table: OperatorTable;
  readonly index?: string;
  readonly actions: readonly DynamoAction[];
}

export interface CommandGrants {
  readonly dynamodb: readonly TableGrant[];
  /** events:PutEvents on the key events bus. */
  readonly putEvents?: true;
}

const on = (table: OperatorTable, actions: readonly DynamoAction[], index?: string): TableGrant => ({
  table,
  actions,
  ...(index ? { index } : {}),
});

/** Every command names a branch, looked up first. */
const BRANCH = on('branchData', ['GetItem']);

/**
 * Finishing a key action: its entry copied to the activity table, its event sent, the entry
 * cleared from the key item (docs/decisions.md "Key events"). Every action finishes its own and
 * any a previous action left pending; `keys activity` finishes the branch's before it reads.
 */
const FINISH_ACTION = [on('activity', ['PutItem']), on('keys', ['UpdateItem'])];

/** A key action on one key: found by id, re-read by hash, changed, finished. */
const KEY_ACTION: CommandGrants = {
  dynamodb: [BRANCH, on('keys', ['Query'], KEYS_BY_ID_INDEX), on('keys', ['GetItem', 'UpdateItem']), ...FINISH_ACTION],
  putEvents: true,
};

/** A branch's keys, each with its last use (one Query of the rollups' `last#` items). */
const KEY_LISTING = [BRANCH, on('keys', ['Query'], KEYS_BY_BRANCH_INDEX), on('rollups', ['Query'])];

/** A branch's usage records, or with --key one key's (the key checked first). */
const USAGE_LOG = [on('usage', ['Query']), on('keys', ['Query'], KEYS_BY_ID_INDEX)];
/** A branch's (or one key's: its items found on the index, then read) hourly rollups. */
const ROLLUP_HOURS = [on('rollups', ['Query', 'BatchGetItem']), on('rollups', ['Query'], ROLLUPS_BY_KEY_INDEX)];

/** Every operator command and the console's pages, and what each may ask of the stack. */
export const OPERATOR_GRANTS = {
  // Without --name, the key is named after the branch's count of keys.
  'keys create': {
    dynamodb: [BRANCH, on('keys', ['Query'], KEYS_BY_BRANCH_INDEX), on('keys', ['PutItem']), ...FINISH_ACTION],
    putEvents: true,
  },
  'keys list': { dynamodb: KEY_LISTING },
  'keys update': KEY_ACTION,
  'keys disable': KEY_ACTION,
  'keys enable': KEY_ACTION,
  // The new key is written first, and deleted again when the old one could not be changed.
  'keys roll': { ...KEY_ACTION, dynamodb: [...KEY_ACTION.dynamodb, on('keys', ['PutItem', 'DeleteItem'])] },
  'keys revoke': KEY_ACTION,
  'keys activity': {
    dynamodb: [
      BRANCH,
      on('keys', ['Query'], KEYS_BY_BRANCH_INDEX),
      on('keys', ['Query'], KEYS_BY_ID_INDEX),
      ...FINISH_ACTION,
      on('activity', ['Query']),
      on('activity', ['Query'], ACTIVITY_BY_KEY_INDEX),
    ],
    putEvents: true,
  },
  // Sends the `Key Expiring` events of its keys (claimed on the key item, found by id) and reads their rollups.
  'keys audit': {
    dynamodb: [...KEY_LISTING, on('keys', ['UpdateItem']), on('keys', ['Query'], KEYS_BY_ID_INDEX), ...ROLLUP_HOURS],
    putEvents: true,
  },
  usage: { dynamodb: [BRANCH, ...USAGE_LOG, on('rollups', ['Query'])] },
  // The aggregator's progress is one item of the rollups table.
  'usage summary': { dynamodb: [BRANCH, ...ROLLUP_HOURS, on('rollups', ['GetItem'])] },
  // Replaces hour items with a recount, clears the mark it leaves on them once they are checked,
  // and clears the calls the aggregator set aside.
  'usage rebuild': {
    dynamodb: [BRANCH, ...USAGE_LOG, ...ROLLUP_HOURS, on('rollups', ['PutItem', 'UpdateItem', 'DeleteItem'])],
  },
  'usage replay': {
    dynamodb: [on('keys', ['Query'], KEYS_BY_ID_INDEX), on('usage', ['BatchGetItem', 'BatchWriteItem'])],
  },
  // Each key with its audit findings from its recent hours (lib/operator/key-audit.ts). The page's
  // key actions are the library's, as the CLI's: the keys commands' grants above.
  'console keys page': { dynamodb: [...KEY_LISTING, ...ROLLUP_HOURS, on('rollups', ['GetItem'])] },
  'console usage page': {
    dynamodb: [
      BRANCH,
      on('keys', ['Query'], KEYS_BY_BRANCH_INDEX),
      ...USAGE_LOG,
      ...ROLLUP_HOURS,
      on('rollups', ['GetItem']),
    ],
  },
} as const satisfies Record<string, CommandGrants>;

export type OperatorCommand = keyof typeof OPERATOR_GRANTS;

export interface PolicyStatement {
  readonly Sid: string;
  readonly Effect: 'Allow';
  readonly Action: readonly string[];
  readonly Resource: readonly string[];
}

export interface PolicyDocument {
  readonly Version: '2012-10-17';
  readonly Statement: readonly PolicyStatement[];
}

/** `${Region}`, `${Account}` and each output's `${<OutputName>}`: replaced by their values (docs/deploy.md). */
const tableArn = (table: OperatorTable, index?: string) =>
  `arn:aws:dynamodb:\${Region}:\${Account}:table/\${${operatorTableOutput(table)}}${index ? `/index/${index}` : ''}`;
const busArn = () => `arn:aws:events:\${Region}:\${Account}:event-bus/\${${KEY_EVENT_BUS_OUTPUT.output}}`;

const sorted = <T>(values: Iterable<T>) => [...new Set(values)].sort();

/**
 * The operator's IAM policy: per table, one statement for the table and one for its indexes
 * (each with the union of what the commands ask), and PutEvents on the key events bus.
 */
export const operatorPolicy = (grants: Record<string, CommandGrants> = OPERATOR_GRANTS): PolicyDocument => {
  const everyGrant = Object.values(grants).flatMap(({ dynamodb }) => dynamodb);
  const statement = (Sid: string, actions: string[], resources: string[]): PolicyStatement[] =>
    actions.length ? [{ Sid, Effect: 'Allow', Action: sorted(actions), Resource: sorted(resources) }] : [];
  const statements = OPERATOR_TABLES.flatMap((table) => {
    const ofTable = everyGrant.filter((grant) => grant.table === table);
    const sid = operatorTableOutput(table).replace(/Name$/, '');
    const [direct, indexed] = [ofTable.filter((grant) => !grant.index), ofTable.filter((grant) => grant.index)];
    const actions = (of: TableGrant[]) => of.flatMap((grant) => grant.actions.map((action) => `dynamodb:${action}`));
    return [
      ...statement(sid, actions(direct), [tableArn(table)]),
      ...statement(
        `${sid}Indexes`,
        actions(indexed),
        indexed.map((grant) => tableArn(table, grant.index)),
      ),
    ];
  });
  const putsEvents = Object.values(grants).some((grant) => grant.putEvents);
  return {
    Version: '2012-10-17',
    Statement: [...statements, ...statement('KeyEvents', putsEvents ? ['events:PutEvents'] : [], [busArn()])],
  };
};

/** The policy's statements, every one, with its placeholders replaced (`Region`, `Account`, output names → values). */
export const policyFor = (
  policy: PolicyDocument,
  values: Readonly<Record<string, string>>,
): (PolicyStatement & { source: string })[] =>
  policy.Statement.map((statement) => ({
    ...statement,
    Resource: statement.Resource.map((resource) =>
      resource.replace(/\$\{(\w+)\}/g, (placeholder, name: string) => values[name] ?? placeholder),
    ),
    source: `operator policy statement ${statement.Sid}`,
  }));

/** Prettier's width for the docs: a list that fits on its line stays on it, as Prettier prints JSON. */
const PRINT_WIDTH = 120;

/** The policy as a JSON block for docs/deploy.md (`npm run docs:counts` writes it), laid out as Prettier keeps it. */
export const renderOperatorPolicy = (start: string, end: string): string => {
  const json = JSON.stringify(operatorPolicy(), null, 2).replace(
    /^( *"\w+": )\[((?:\n *"[^"\n]*",?)+)\n *\]/gm,
    (list, head: string, items: string) => {
      const inline = `${head}[${items.trim().split(/,\n */).join(', ')}]`;
      return inline.length + 1 <= PRINT_WIDTH ? inline : list;
    },
  );
  return [start, '', '```json', json, '```', '', end].join('\n');
};
