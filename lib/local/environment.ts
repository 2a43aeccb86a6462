/**
 * The local environment behind `npm start`: an embedded DynamoDB (or an external one), the
 * tables from the shared definitions, demo data, a demo key, the local gateway serving the
 * same handlers the CDK stack deploys, and the usage change feed keeping the rollups.
 */
import { createOperatorContext, operatorTableNames } from '../operator/context';
import { seed } from '../operator/seed';
import type { ChangeFeed } from './change-feed';
import { startUsageChangeFeed } from './usage-change-feed';
import { ensureTables } from '../operator/tables';
import { createDemoKey } from './demo-key';
import { setUpLocalKeyEvents, type LocalKeyEventsSetup } from './key-events-setup';
import { startEmbeddedDynamo, type EmbeddedDynamo } from './dynamo';
import { useEmbeddedStore } from './in-process-transport';
import { idleRelease, type IdleRelease } from './idle-release';
import type { StoredData } from './string-store';
import { PortInUseError, startGateway, type Gateway, type GatewayOptions } from './gateway';
import { DEMO_SEED_FILE } from '../project-paths';
import { tableDefinitions } from '../../shared/data/tables';
import { LOCAL_API_PORT, LOCAL_DYNAMODB_PORT, LOCAL_HOST } from '../local-defaults';

const LOOPBACK = LOCAL_HOST;

export { DEMO_SEED_FILE };

export interface LocalEnvironmentOptions {
  /** @default 3000 (env PORT) */
  port?: number;
  /** @default '127.0.0.1' (env HOST) */
  host?: string;
  /** Embedded DynamoDB port. @default 8000 (env DYNAMODB_PORT) */
  dynamoPort?: number;
  /** Use this DynamoDB instead of starting one (env DYNAMODB_ENDPOINT). */
  dynamoEndpoint?: string;
  /** Keep the embedded DynamoDB's data in this directory across restarts. */
  dataDir?: string;
  /** @default seed/demo.json */
  seedFile?: string;
  staticFiles?: GatewayOptions['staticFiles'];
}

export interface LocalEnvironment {
  gateway: Gateway;
  /** Feeds the usage table's writes to the rollups aggregator (lib/local/change-feed.ts). */
  usageFeed: ChangeFeed;
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
  /** What the embedded DynamoDB holds in memory (undefined for an external one or a data directory). */
  storedData(): Promise<StoredData | undefined>;
  /** Requests the embedded DynamoDB served over HTTP (undefined for an external one). */
  storeHttpRequests(): number | undefined;
  /** Gives V8's unused pages back once the API goes idle (lib/local/idle-release.ts). */
  idleRelease: IdleRelease;
  close(): Promise<void>;
}

/** The embedded DynamoDB (unless an external one is named) and the usage table's change feed. */
const startStoreAndFeed = async (
  options: LocalEnvironmentOptions,
): Promise<{ dynamo: EmbeddedDynamo | undefined; feed: ChangeFeed }> => {
  let dynamo: EmbeddedDynamo | undefined;
  try {
    // The embedded DynamoDB takes the advertised port and feeds the usage table's writes from
    // inside (lib/local/write-capture.ts): every write, whoever makes it, one HTTP hop. An external
    // DynamoDB gets the feed's proxy in front of it instead. Both on loopback whatever HOST says:
    // the database is for this machine's tools only.
    if (!options.dynamoEndpoint) {
      dynamo = await startEmbeddedDynamo({
        port: options.dynamoPort ?? LOCAL_DYNAMODB_PORT,
        ...(options.dataDir ? { dataDir: options.dataDir } : {}),
      });
    }
    const feed = await startUsageChangeFeed({
      target: options.dynamoEndpoint ?? dynamo!.endpoint,
      ...(dynamo ? { store: dynamo } : {}),
      usageTable: operatorTableNames(process.env).usage,
      host: LOOPBACK,
      port: 0,
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
  const { dynamo, feed } = await startStoreAndFeed(options);
  const dynamoEndpoint = feed.endpoint;

  // The handlers read their configuration from the environment when they are imported.
  process.env.DYNAMODB_ENDPOINT = dynamoEndpoint;
  process.env.AWS_REGION ??= 'local';
  // Before the operator context and the handlers read them: the demo key's creation is an event too.
  const keyEvents = setUpLocalKeyEvents(options.dataDir);
  const operator = createOperatorContext(process.env);
  if (dynamo) useEmbeddedStore(operator.client, dynamo.transport);
  for (const { name, envVar } of tableDefinitions) process.env[envVar] = operator.tables[name];

  try {
    await ensureTables(operator.client, operator.tables);
    const seeded = await seed(operator, options.seedFile ?? DEMO_SEED_FILE);
    // The demo key's branch: the first of the seed file (which has at least one, or seed() refused it).
    const demoBranchId = seeded.branch_ids[0]!;
    const demoKey = await createDemoKey(operator, demoBranchId);
    const gateway = await startGateway({
      port: options.port ?? LOCAL_API_PORT,
      host,
      ...(options.staticFiles ? { staticFiles: options.staticFiles } : {}),
    });
    const idle = idleRelease();
    gateway.server.on('request', idle.touch);
    // The handlers' one client, loaded with them: in this process it needs no socket either.
    if (dynamo) useEmbeddedStore((await import('../../shared/lambda/runtime')).documentClient, dynamo.transport);
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
      storedData: async () => dynamo?.storedData(),
      storeHttpRequests: () => dynamo?.httpRequests(),
      idleRelease: idle,
      close: async () => {
        idle.close();
        await gateway.close();
        operator.close();
        await feed.close();
        await dynamo?.close();
      },
    };
  } catch (error) {
    operator.close();
    await feed.close();
    await dynamo?.close();
    throw error;
  }
};
