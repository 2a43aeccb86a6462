/**
 * The local environment behind `npm start`: an embedded DynamoDB (or an external one), the
 * tables from the shared definitions, demo data, a demo key, the local gateway serving the
 * same handlers the CDK stack deploys, and the usage change feed keeping the rollups.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOperatorContext, finishKeyActions, operatorTableNames } from '../operator/context';
import { seed } from '../operator/seed';
import { startUsageChangeFeed, type Recovery, type UsageChangeFeed } from './usage-change-feed';
import { ensureTables } from '../operator/tables';
import { createDemoKey } from './demo-key';
import { setUpLocalKeyEvents, type LocalKeyEventsSetup } from './key-events-setup';
import { startEmbeddedDynamo, type EmbeddedDynamo } from './dynamo';
import { PortInUseError, startGateway, type Gateway, type GatewayOptions } from './gateway';
import { DEMO_SEED_FILE } from '../project-paths';
import { tableDefinitions } from '../../shared/data/tables';
import { LOCAL_API_PORT, LOCAL_DYNAMODB_PORT, LOCAL_HOST } from '../local-defaults';
import { terminal } from '../operator/terminal';

export { DEMO_SEED_FILE };

export interface LocalEnvironmentOptions {
  /** @default 3000 (env PORT) */
  port?: number;
  /** @default '127.0.0.1' (env HOST) */
  host?: string;
  /** The port of the DynamoDB endpoint (the change feed's). @default 8000 (env DYNAMODB_PORT) */
  dynamoPort?: number;
  /** Use this DynamoDB instead of starting one (env DYNAMODB_ENDPOINT). */
  dynamoEndpoint?: string;
  /** Keep the embedded DynamoDB's data (and the key events) in this directory across restarts. */
  dataDir?: string;
  /** Where the store and the key events go without `dataDir`. @default a new temporary directory, removed on close */
  scratchDir?: string;
  /** @default seed/demo.json */
  seedFile?: string;
  staticFiles?: GatewayOptions['staticFiles'];
}

export interface LocalEnvironment {
  gateway: Gateway;
  /** Feeds the usage table's writes to the rollups aggregator (lib/local/change-feed.ts). */
  usageFeed: UsageChangeFeed;
  /** The endpoint every tool is given: the change feed in front of the store. */
  dynamoEndpoint: string;
  demoKey: string;
  demoKeyId: string;
  /** The demo key expires a day after the start (lib/local/demo-key.ts). */
  demoKeyExpiresAt: string;
  /** Demo keys of earlier starts (kept by --data-dir) that this start revoked. */
  revokedDemoKeyIds: string[];
  demoBranchId: string;
  /** Where key events go and which keys verify secret scanning reports (lib/local/key-events-setup.ts). */
  keyEvents: LocalKeyEventsSetup;
  /** What this start recounted after a run that stopped without applying every call. */
  recovery: Recovery | undefined;
  close(): Promise<void>;
}

/**
 * The embedded DynamoDB on a free loopback port (unless an external one is named) and, on the
 * advertised port, the usage table's change feed in front of it: every tool's writes pass it.
 */
const startStoreAndFeed = async (
  options: LocalEnvironmentOptions,
  storeDir: string | undefined,
): Promise<{ dynamo: EmbeddedDynamo | undefined; feed: UsageChangeFeed }> => {
  let dynamo: EmbeddedDynamo | undefined;
  try {
    if (!options.dynamoEndpoint) {
      const onNotice = (message: string) => process.stderr.write(`${terminal`${message}`}\n`);
      dynamo = await startEmbeddedDynamo(storeDir ? { dataDir: storeDir, onNotice } : {});
    }
    const feed = await startUsageChangeFeed({
      target: options.dynamoEndpoint ?? dynamo!.endpoint,
      ...(dynamo ? { store: dynamo.serve, storeDown: dynamo.down } : {}),
      usageTable: operatorTableNames(process.env).usage,
      // On loopback whatever HOST says: the database is for this machine's tools only.
      host: LOCAL_HOST,
      port: options.dynamoPort ?? LOCAL_DYNAMODB_PORT,
      onError: (error) => process.stderr.write(`Usage change feed: ${(error as Error).message}\n`),
    });
    return { dynamo, feed };
  } catch (error) {
    await dynamo?.close();
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      throw new PortInUseError(
        `DynamoDB port ${options.dynamoPort ?? LOCAL_DYNAMODB_PORT} is already in use; set DYNAMODB_PORT to another port`,
        { cause: error },
      );
    }
    throw error;
  }
};

export const startLocalEnvironment = async (options: LocalEnvironmentOptions = {}): Promise<LocalEnvironment> => {
  const host = options.host ?? LOCAL_HOST;
  const ownScratch = !options.dataDir && !options.scratchDir;
  const scratch = options.dataDir ? undefined : (options.scratchDir ?? (await mkdtemp(join(tmpdir(), 'branch-api-'))));
  const removeScratch = () => (ownScratch && scratch ? rm(scratch, { recursive: true, force: true }) : undefined);
  let started;
  try {
    started = await startStoreAndFeed(options, options.dataDir ?? (scratch && join(scratch, 'store')));
  } catch (error) {
    await removeScratch();
    throw error;
  }
  const { dynamo, feed } = started;
  const dynamoEndpoint = feed.endpoint;

  // The handlers read their configuration from the environment when they are imported.
  process.env.DYNAMODB_ENDPOINT = dynamoEndpoint;
  process.env.AWS_REGION ??= 'local';
  // Before the operator context and the handlers read them: the demo key's creation is an event too.
  const keyEvents = setUpLocalKeyEvents(options.dataDir ?? scratch);
  const operator = createOperatorContext(process.env);
  for (const { name, envVar } of tableDefinitions) process.env[envVar] = operator.tables[name];

  try {
    await ensureTables(operator.client, operator.tables);
    await finishKeyActions(operator);
    const seeded = await seed(operator, options.seedFile ?? DEMO_SEED_FILE);
    const recovery = await feed.begin(operator);
    // The demo key's branch: the first of the seed file (which has at least one, or seed() refused it).
    const demoBranchId = seeded.branch_ids[0]!;
    const demoKey = await createDemoKey(operator, demoBranchId);
    const gateway = await startGateway({
      port: options.port ?? LOCAL_API_PORT,
      host,
      ...(options.staticFiles ? { staticFiles: options.staticFiles } : {}),
    });
    return {
      gateway,
      usageFeed: feed,
      dynamoEndpoint,
      demoKey: demoKey.key,
      demoKeyId: demoKey.keyId,
      demoKeyExpiresAt: demoKey.expiresAt,
      revokedDemoKeyIds: demoKey.revokedKeyIds,
      demoBranchId,
      keyEvents,
      recovery,
      close: async () => {
        await gateway.close();
        operator.close();
        await feed.close();
        await dynamo?.close();
        await removeScratch();
      },
    };
  } catch (error) {
    operator.close();
    await feed.close();
    await dynamo?.close();
    await removeScratch();
    throw error;
  }
};
