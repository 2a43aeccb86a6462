/**
 * The local environment behind `npm start`: an embedded DynamoDB (or an external one), the
 * tables from the shared definitions, demo data, a demo key, the local gateway serving the
 * same handlers the CDK stack deploys, and the usage change feed keeping the rollups.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOperatorContext, finishKeyActions, operatorTableNames, type OperatorContext } from '../operator/context';
import { seed } from '../operator/seed';
import { startUsageChangeFeed, type Recovery, type UsageChangeFeed } from './usage-change-feed';
import { ensureTables } from '../operator/tables';
import { createDemoKey } from './demo-key';
import { setUpLocalKeyEvents, type LocalKeyEventsSetup } from './key-events-setup';
import { startEmbeddedDynamo, type EmbeddedDynamo } from './dynamo';
import { startGateway, type Gateway, type GatewayOptions } from './gateway';
import { DEMO_SEED_FILE } from '../project-paths';
import { tableDefinitions } from '../../shared/data/tables';
import { LOCAL_API_PORT, LOCAL_DYNAMODB_PORT, LOCAL_HOST } from '../local-defaults';
import { terminal } from '../operator/terminal';

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

export const startLocalEnvironment = async (options: LocalEnvironmentOptions = {}): Promise<LocalEnvironment> => {
  const ownScratch = !options.dataDir && !options.scratchDir;
  const scratch = options.dataDir ? undefined : (options.scratchDir ?? (await mkdtemp(join(tmpdir(), 'branch-api-'))));
  const storeDir = options.dataDir ?? (scratch && join(scratch, 'store'));
  const dynamoPort = options.dynamoPort ?? LOCAL_DYNAMODB_PORT;
  let dynamo: EmbeddedDynamo | undefined;
  let feed: UsageChangeFeed | undefined;
  let operator: OperatorContext | undefined;
  const closeAll = async () => {
    operator?.close();
    await feed?.close();
    await dynamo?.close();
    if (ownScratch && scratch) await rm(scratch, { recursive: true, force: true });
  };
  try {
    // The embedded DynamoDB on a free loopback port (unless an external one is named) and, on the
    // advertised port, the usage table's change feed in front of it: every tool's writes pass it.
    if (!options.dynamoEndpoint) {
      const onNotice = (message: string) => process.stderr.write(`${terminal`${message}`}\n`);
      dynamo = await startEmbeddedDynamo(storeDir ? { dataDir: storeDir, onNotice } : {});
    }
    feed = await startUsageChangeFeed({
      target: options.dynamoEndpoint ?? dynamo!.endpoint,
      ...(dynamo ? { store: dynamo.serve, storeDown: dynamo.down } : {}),
      usageTable: operatorTableNames(process.env).usage,
      // On loopback whatever HOST says: the database is for this machine's tools only.
      host: LOCAL_HOST,
      port: dynamoPort,
      onError: (error) => process.stderr.write(`Usage change feed: ${(error as Error).message}\n`),
    }).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'EADDRINUSE') throw error;
      throw new Error(`DynamoDB port ${dynamoPort} is already in use; set DYNAMODB_PORT to another port`, {
        cause: error,
      });
    });
    const dynamoEndpoint = feed.endpoint;

    // The handlers read their configuration from the environment when they are imported.
    process.env.DYNAMODB_ENDPOINT = dynamoEndpoint;
    process.env.AWS_REGION ??= 'local';
    // Before the operator context and the handlers read them: the demo key's creation is an event too.
    const keyEvents = setUpLocalKeyEvents(options.dataDir ?? scratch);
    operator = createOperatorContext(process.env);
    for (const { name, envVar } of tableDefinitions) process.env[envVar] = operator.tables[name];

    await ensureTables(operator.client, operator.tables);
    await finishKeyActions(operator);
    const seeded = await seed(operator, options.seedFile ?? DEMO_SEED_FILE);
    const recovery = await feed.begin(operator);
    // The demo key's branch: the first of the seed file (which has at least one, or seed() refused it).
    const demoBranchId = seeded.branch_ids[0]!;
    const demoKey = await createDemoKey(operator, demoBranchId);
    const gateway = await startGateway({
      port: options.port ?? LOCAL_API_PORT,
      host: options.host ?? LOCAL_HOST,
      staticFiles: options.staticFiles,
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
      close: () => gateway.close().then(closeAll),
    };
  } catch (error) {
    await closeAll();
    throw error;
  }
};
