/**
 * The local environment behind `npm start`: an embedded DynamoDB (or an external one), the
 * tables from the shared definitions, demo data, a demo key, and the local gateway serving the
 * same handlers the CDK stack deploys.
 */
import { join } from 'node:path';
import { createOperatorContext } from '../operator/context';
import { createKey, seed } from '../operator/operations';
import { ensureTables } from '../operator/tables';
import { startEmbeddedDynamo, type EmbeddedDynamo } from './dynamo';
import { PortInUseError, PROJECT_ROOT, startGateway, type Gateway, type GatewayOptions } from './gateway';

export const DEMO_SEED_FILE = join(PROJECT_ROOT, 'seed', 'demo.json');

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
  dynamoEndpoint: string;
  demoKey: string;
  demoKeyId: string;
  demoBranchId: string;
  close(): Promise<void>;
}

export const startLocalEnvironment = async (options: LocalEnvironmentOptions = {}): Promise<LocalEnvironment> => {
  let dynamo: EmbeddedDynamo | undefined;
  const host = options.host ?? '127.0.0.1';
  if (!options.dynamoEndpoint) {
    try {
      dynamo = await startEmbeddedDynamo({
        port: options.dynamoPort ?? 8000,
        host,
        ...(options.dataDir ? { dataDir: options.dataDir } : {}),
      });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
        throw new PortInUseError(
          `DynamoDB port ${options.dynamoPort ?? 8000} is already in use; set DYNAMODB_PORT to another port`,
          { cause: error },
        );
      }
      throw error;
    }
  }
  const dynamoEndpoint = options.dynamoEndpoint ?? dynamo!.endpoint;

  // The handlers read their configuration from the environment when they are imported.
  process.env.DYNAMODB_ENDPOINT = dynamoEndpoint;
  process.env.AWS_REGION ??= 'local';
  const operator = createOperatorContext(process.env);
  process.env.KEYS_TABLE = operator.tables.keys;
  process.env.USAGE_TABLE = operator.tables.usage;
  process.env.BRANCH_DATA_TABLE = operator.tables.branchData;
  process.env.RATE_LIMITS_TABLE = operator.tables.rateLimits;

  try {
    await ensureTables(operator.client, operator.tables);
    const seeded = await seed(operator, options.seedFile ?? DEMO_SEED_FILE);
    // The demo key's branch: the first of the seed file (which has at least one, or seed() refused it).
    const demoBranchId = seeded.branch_ids[0]!;
    const { key, record } = await createKey(operator, {
      branchId: demoBranchId,
      scopes: 'read',
      name: `demo key (npm start ${new Date().toISOString()})`,
    });
    const gateway = await startGateway({
      port: options.port ?? 3000,
      host,
      ...(options.staticFiles ? { staticFiles: options.staticFiles } : {}),
    });
    return {
      gateway,
      dynamoEndpoint,
      demoKey: key,
      demoKeyId: record.key_id,
      demoBranchId,
      close: async () => {
        await gateway.close();
        operator.close();
        await dynamo?.close();
      },
    };
  } catch (error) {
    operator.close();
    await dynamo?.close();
    throw error;
  }
};
