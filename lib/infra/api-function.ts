/**
 * One Lambda function of the API: a NodejsFunction bundled by the local esbuild (never Docker),
 * its own log group with retention, its own role with no managed policy, and `bindTables`,
 * which sets the table environment variables and grants exactly the calls the handlers make.
 */
import * as path from 'node:path';
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import {
  LogLevel,
  NodejsFunction,
  OutputFormat,
  SourceMapMode,
  type BundlingOptions,
} from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Validations } from 'aws-cdk-lib';
import { Construct } from 'constructs';
import { DEFAULT_RATE_LIMIT } from '../../shared/domain/rate-limit';
import { SERVICE_NAME } from '../../shared/domain/telemetry';
import { ENDPOINT_TIMEOUT_SECONDS, type TableAccess } from '../../shared/api/routes';
import { API_TABLES, TABLE_ENV, tableDefinitions, type TableNames } from '../../shared/data/tables';
import { PROJECT_ROOT } from '../project-paths';

/** Lambda runtime of every function; local development runs the same Node major (docs/toolchain.md). */
export const FUNCTION_RUNTIME = lambda.Runtime.NODEJS_24_X;
/** Architecture of every function: the bundles and the bench figures are Graviton (arm64). */
export const FUNCTION_ARCHITECTURE = lambda.Architecture.ARM_64;

/** Each bundle (`index.mjs`) must stay within this many bytes: it is what a cold start parses. */
export const BUNDLE_BUDGET_BYTES = 360 * 1024;

/** Credential providers Lambda never reaches, replaced in the bundle (see unused-credential-providers.ts). */
export const STUBBED_CREDENTIAL_PROVIDERS = [
  '@aws-sdk/credential-provider-sso',
  '@aws-sdk/credential-provider-ini',
  '@aws-sdk/credential-provider-process',
  '@aws-sdk/credential-provider-web-identity',
] as const;

/**
 * esbuild settings of the stack and the bundle test. `mainFields: module,main`: with `main` first the
 * SDK's CommonJS build is bundled and fails at import (`Dynamic require of "node:https"`). Local
 * bundling runs in the project root, so the alias paths are relative to it.
 */
export const BUNDLING: BundlingOptions = {
  format: OutputFormat.ESM,
  mainFields: ['module', 'main'],
  target: 'node24',
  minify: true,
  sourceMap: true,
  // Linked (esbuild --sourcemap): index.mjs ends with the sourceMappingURL comment --enable-source-maps follows.
  sourceMapMode: SourceMapMode.DEFAULT,
  // Stack traces still map to file and line; the map stays small without the sources inside.
  sourcesContent: false,
  bundleAwsSDK: true,
  externalModules: [],
  esbuildArgs: {
    '--alias': [
      ...STUBBED_CREDENTIAL_PROVIDERS.map((name) => `${name}=./lib/infra/unused-credential-providers.ts`),
      // Key events: one regional bus, plain SigV4 (lib/infra/single-region-signer.ts).
      '@aws-sdk/signature-v4-multi-region=./lib/infra/single-region-signer.ts',
    ],
  },
  forceDockerBundling: false,
  // `cdk synth --quiet` shows warnings and errors only; `-c bundlingLogs=true` shows each bundle's size.
  logLevel: LogLevel.WARNING,
};

/** The context option that asks esbuild for its summary (bundle sizes) during synth. */
export const BUNDLING_LOGS_CONTEXT = 'bundlingLogs';

/**
 * Memory buys CPU, and a cold start is CPU-bound. The timeout covers a request's DynamoDB calls in
 * sequence, each within its SDK deadline, plus a cold start, under API Gateway's 30 s limit.
 */
export const ENDPOINT_MEMORY_MB = 512;
export const ENDPOINT_TIMEOUT = Duration.seconds(ENDPOINT_TIMEOUT_SECONDS);
/** The catch-all function does no I/O at all: it only matches the path. */
export const FALLBACK_MEMORY_MB = 256;
export const FALLBACK_TIMEOUT = Duration.seconds(3);

/** Every table, as bindTables needs them: one per field of TableNames. */
export type ApiTables = { readonly [K in keyof TableNames]: dynamodb.ITable };

export interface ApiFunctionProps {
  /** Handler module relative to the project root (it exports `handler`), e.g. `functions/get-branch.ts`. */
  readonly entry: string;
  /**
   * @default ENDPOINT_MEMORY_MB (512)
   */
  readonly memorySize?: number;
  /**
   * @default ENDPOINT_TIMEOUT (10 s)
   */
  readonly timeout?: Duration;
  /**
   * Concurrent executions reserved for this function: its floor and its ceiling (docs/deploy.md "Concurrency").
   * @default - none: it draws on the account's unreserved pool
   */
  readonly reservedConcurrency?: number;
  /**
   * How long the function's log group keeps its logs.
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly logRetention?: logs.RetentionDays;
  /**
   * Powertools log level (`POWERTOOLS_LOG_LEVEL`).
   * @default 'INFO'
   */
  readonly logLevel?: string;
  /**
   * X-Ray active tracing (X-Ray's default sampling): the stack's `tracing` choice.
   * @default true
   */
  readonly tracing?: boolean;
  /**
   * Environment variables added to the defaults (Powertools settings, source maps).
   * @default - none
   */
  readonly environment?: Readonly<Record<string, string>>;
}

/** The log settings a construct hands on to each of its functions. */
export type FunctionLogging = Pick<ApiFunctionProps, 'logRetention' | 'logLevel' | 'tracing'>;

/** The log settings of a construct's props, for its functions (an absent one keeps ApiFunction's default). */
export const loggingOf = ({ logRetention, logLevel, tracing }: FunctionLogging): FunctionLogging => ({
  logRetention,
  logLevel,
  tracing,
});

/** A function of the API with its log group and a role that has nothing until it is given something. */
export class ApiFunction extends Construct {
  readonly function: NodejsFunction;
  readonly logGroup: logs.LogGroup;
  readonly role: iam.Role;

  constructor(scope: Construct, id: string, props: ApiFunctionProps) {
    super(scope, id);

    this.logGroup = new logs.LogGroup(this, 'LogGroup', {
      retention: props.logRetention ?? logs.RetentionDays.ONE_MONTH,
      // Logs belong to this deployment; a redeploy after teardown must not collide with them.
      removalPolicy: RemovalPolicy.DESTROY,
    });

    // An explicit role instead of AWSLambdaBasicExecutionRole: it may write to its own log
    // group only, not create log groups anywhere.
    this.role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `Runs ${props.entry}`,
    });
    this.allow(['logs:CreateLogStream', 'logs:PutLogEvents'], [this.logGroup.logGroupArn]);

    this.function = new NodejsFunction(this, 'Function', {
      entry: path.join(PROJECT_ROOT, props.entry),
      handler: 'handler',
      projectRoot: PROJECT_ROOT,
      depsLockFilePath: path.join(PROJECT_ROOT, 'package-lock.json'),
      runtime: FUNCTION_RUNTIME,
      architecture: FUNCTION_ARCHITECTURE,
      memorySize: props.memorySize ?? ENDPOINT_MEMORY_MB,
      timeout: props.timeout ?? ENDPOINT_TIMEOUT,
      reservedConcurrentExecutions: props.reservedConcurrency,
      role: this.role,
      logGroup: this.logGroup,
      tracing: props.tracing === false ? lambda.Tracing.DISABLED : lambda.Tracing.ACTIVE,
      bundling: {
        ...BUNDLING,
        ...(String(this.node.tryGetContext(BUNDLING_LOGS_CONTEXT)) === 'true' ? { logLevel: LogLevel.INFO } : {}),
      },
      environment: {
        POWERTOOLS_SERVICE_NAME: SERVICE_NAME,
        POWERTOOLS_LOG_LEVEL: props.logLevel ?? 'INFO',
        NODE_OPTIONS: '--enable-source-maps',
        ...props.environment,
      },
    });

    if (props.tracing === false) return;
    Validations.of(this.role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'Active tracing adds xray:PutTraceSegments and xray:PutTelemetryRecords, which support no resource-level ' +
        'permissions; every other statement of this role names its resources.',
    });
  }

  /**
   * Points the function at the tables and grants exactly the calls of `access` (routes.ts
   * `tableAccessOf`), each on its table or index. Not table.grant(): that adds `<table>/index/*`
   * and more actions than the handler uses.
   */
  bindTables(
    tables: ApiTables,
    usageRetentionDays: number,
    access: readonly TableAccess[],
    defaultRateLimit: string = DEFAULT_RATE_LIMIT,
  ): this {
    // The tables an API function's configuration reads (shared/config/env.ts), no more.
    for (const name of API_TABLES) this.function.addEnvironment(TABLE_ENV[name], tables[name].tableName);
    this.function.addEnvironment('USAGE_RETENTION_DAYS', String(usageRetentionDays));
    this.function.addEnvironment('DEFAULT_RATE_LIMIT', defaultRateLimit);
    for (const { table, actions, index } of access) {
      const definition = tableDefinitions.find((candidate) => candidate.name === table);
      if (actions.length === 0) throw new Error(`ApiFunction ${this.node.id}: no action given on the ${table} table`);
      if (index !== undefined && !definition?.indexes.some((candidate) => candidate.indexName === index)) {
        throw new Error(`ApiFunction ${this.node.id}: the ${table} table has no index ${JSON.stringify(index)}`);
      }
      const { tableArn } = tables[table];
      this.allow([...actions], [index === undefined ? tableArn : `${tableArn}/index/${index}`]);
    }
    return this;
  }

  private allow(actions: string[], resources: string[]): void {
    this.role.addToPolicy(new iam.PolicyStatement({ actions, resources }));
  }
}
