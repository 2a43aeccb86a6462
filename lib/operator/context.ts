/**
 * What the operator tooling (the settings-page side: CLI, console, library) talks to: the same
 * repositories the handlers use, on the embedded store or a deployed stack's tables.
 *
 * Target selection, from the environment (which `--stack`/`--outputs` fill, lib/operator/target.ts):
 * - `DYNAMODB_ENDPOINT` set: that endpoint (e.g. the one `npm start` prints), tables defaulting to
 *   the local names, key events to the file `KEY_EVENTS_FILE`;
 * - otherwise AWS, with the default credential chain, the region (AWS_REGION or AWS_DEFAULT_REGION;
 *   `resolveTarget` sets it from `--region` or the profile) and every stack output the tooling reads
 *   (`OPERATOR_OUTPUTS`: the table names and `KEY_EVENT_BUS_NAME`) set, or nothing runs.
 */
import { readDynamoDbSettings, readKeyEventSettings } from '../../shared/config/env';
import { createKeyEventEmitter, noKeyEvents, type EmitterLogger } from '../../shared/data/key-events';
import { createDocumentClient } from '../../shared/data/dynamodb';
import { createRepositories } from '../../shared/data/repositories';
import { RollupsRepository } from '../../shared/data/repositories/rollups';
import { actorResolver } from './actor';
import { assertDeployedTarget } from './target';
import { LOCAL_TABLE_NAMES, tableDefinitions, type TableNames } from '../../shared/data/tables';

type Env = Record<string, string | undefined>;

export const operatorTableNames = (env: Env = process.env): TableNames =>
  Object.fromEntries(
    tableDefinitions.map(({ name, envVar }) => [name, env[envVar]?.trim() || LOCAL_TABLE_NAMES[name]]),
  ) as unknown as TableNames;

/** A key event that could not be sent: one JSON line on stderr, to replay (docs/decisions.md "Key events"). */
const stderrLogger: EmitterLogger = {
  error: (message, extra) =>
    process.stderr.write(`${JSON.stringify({ level: 'ERROR', message, ...extra, error: String(extra.error) })}\n`),
};

const stderrWarning = (message: string) => process.stderr.write(`warning: ${message}\n`);

export const createOperatorContext = (env: Env = process.env) => {
  assertDeployedTarget(env);
  const settings = readDynamoDbSettings(env);
  const tables = operatorTableNames(env);
  const client = createDocumentClient(settings, env);
  // Key events: KEY_EVENT_BUS_NAME against AWS, KEY_EVENTS_FILE locally (npm start prints it).
  const keyEvents = createKeyEventEmitter(readKeyEventSettings(env), stderrLogger);
  const repositories = createRepositories(client, tables, keyEvents);
  return {
    tables,
    /** The local DynamoDB's endpoint (undefined when deployed) and the region: messages name them. */
    endpoint: settings.endpoint,
    region: settings.region,
    ...repositories,
    /** Key activity (lib/operator/keys.ts). */
    activity: repositories.activity!,
    /** Where key events go (the keys repository sends the actions' own; `keys audit` the expiring ones). */
    keyEvents,
    /** Who actions are recorded as: the OS user locally, the IAM principal ARN on AWS (lib/operator/actor.ts). */
    actor: actorResolver(env, settings.endpoint !== undefined),
    /** Usage rollups (lib/operator/usage-rollups.ts). */
    rollups: new RollupsRepository(client, tables.rollups),
    /** The document client (it also sends plain commands such as CreateTable). */
    client,
    close: () => client.destroy(),
  };
};

export type OperatorContext = ReturnType<typeof createOperatorContext>;

/**
 * Finishes the entries waiting in key items' outboxes on a local target (docs/decisions.md "Key
 * events": a killed process's, or events the destination did not take): copied, events sent in
 * order. Only with somewhere to send them; never fails the caller.
 */
export const finishKeyActions = async (ctx: OperatorContext): Promise<void> => {
  if (!ctx.endpoint || ctx.keyEvents === noKeyEvents) return;
  try {
    const { unsent, uncopied } = await ctx.keys.outbox.finishAll();
    const left = [
      unsent > 0 ? `${unsent} key event${unsent === 1 ? '' : 's'} could not be sent yet` : '',
      uncopied > 0 ? `${uncopied} activity entr${uncopied === 1 ? 'y' : 'ies'} could not be written yet` : '',
    ].filter(Boolean);
    if (left.length > 0) stderrWarning(`${left.join(' and ')}; the next command or start finishes them, in order`);
  } catch (error) {
    stderrWarning(`unfinished key actions were not checked: ${(error as Error).message}`);
  }
};
