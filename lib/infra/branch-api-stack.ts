/**
 * The whole service in one stack: the tables of shared/data/tables.ts, one function per route of
 * the shared route table plus the `$default` catch-all and the rollups aggregator, the HTTP API
 * with its `api` stage, and alarms (docs/deploy.md has the generated counts).
 * Props are validated up front, so a bad value fails `cdk synth` with a message, not a deploy.
 */
import { Annotations, Aspects, CfnOutput, Stack, Tags, Validations, type StackProps } from 'aws-cdk-lib';
import { WriteNagSuppressionsToCloudFormationAspect } from 'cdk-nag';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sns from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';
import { fallbackEntry, routes, tableAccessOf, type RouteId } from '../../shared/api/routes';
import { OPERATOR_TABLES, operatorTableOutput } from '../../shared/data/tables';
import { KEY_EVENT_BUS_OUTPUT, OPERATOR_OUTPUTS } from '../operator/target';
import { DEFAULT_RATE_LIMIT, parseRateLimit } from '../../shared/domain/rate-limit';
import { DEFAULT_USAGE_RETENTION_DAYS } from '../../shared/domain/usage-record';
import { ApiFunction, FALLBACK_MEMORY_MB, FALLBACK_TIMEOUT } from './api-function';
import {
  concurrencyProblems,
  DEFAULT_CONCURRENCY_QUOTA,
  QUOTA_OPTION,
  recordRequests,
  type ReservedConcurrency,
} from './concurrency';
import { DataTables } from './data-tables';
import { BranchHttpApi, type StageThrottle } from './http-api';
import { Monitoring } from './monitoring';
import { UsageAggregation } from './usage-aggregation';
import { KeyActionsStream } from './key-actions-stream';
import { KeyEvents } from './key-events';
import { SecretScanning } from './secret-scanning';

export const POWERTOOLS_LOG_LEVELS = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'CRITICAL', 'SILENT'] as const;
export type PowertoolsLogLevel = (typeof POWERTOOLS_LOG_LEVELS)[number];

export interface BranchApiStackProps extends StackProps {
  /**
   * The stage's default throttle, applied to **each route** on its own: the outer guard against
   * aggregate overload, where each key's own limit keeps one branch from taking the others' share
   * (sized in docs/deploy.md "Limits").
   * @default { rateLimit: 1000, burstLimit: 2000 }
   */
  readonly throttle?: Partial<StageThrottle>;
  /**
   * Retention of every log group (functions and API access logs).
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly logRetention?: logs.RetentionDays;
  /**
   * Delete every table with the stack (and drop their deletion protection).
   * For throwaway stages only.
   * @default false
   */
  readonly destroyData?: boolean;
  /**
   * Days a usage record is kept before DynamoDB TTL removes it (`USAGE_RETENTION_DAYS`).
   * @default 90
   */
  readonly usageRetentionDays?: number;
  /**
   * Days an hour item of the usage rollups is kept (`ROLLUP_RETENTION_DAYS`).
   * @default 400
   */
  readonly rollupRetentionDays?: number;
  /**
   * Rate limit of keys created without one (`DEFAULT_RATE_LIMIT`): `N/s`, `N/min` or `N/h`.
   * @default '50/s'
   */
  readonly defaultRateLimit?: string;
  /**
   * Powertools log level of the functions.
   * @default 'INFO'
   */
  readonly logLevel?: PowertoolsLogLevel;
  /**
   * X-Ray active tracing on every function, at X-Ray's default sampling (1 request a second, then 5 %):
   * about $0.37 per million calls at 100 M a month (docs/decisions.md "Cost").
   * @default true
   */
  readonly tracing?: boolean;
  /**
   * SNS topic that alarms notify (alarm and recovery).
   * @default - none: give this or `alarmEmail`, or `cdk synth` warns that alarms notify nobody
   */
  readonly alarmTopicArn?: string;
  /**
   * E-mail address subscribed to a topic the stack creates for its alarms (when no `alarmTopicArn`).
   * @default - none
   */
  readonly alarmEmail?: string;
  /**
   * Concurrent executions reserved per function kind (docs/deploy.md "Concurrency"): each its
   * floor and its ceiling. All of them must leave the 100 that AWS keeps unreserved.
   * @default - none: every function draws on the account's unreserved pool
   */
  readonly reservedConcurrency?: ReservedConcurrency;
  /**
   * The account's "Concurrent executions" quota in the region, which the reservations must fit.
   * @default 1000 (AWS's default quota)
   */
  readonly lambdaConcurrencyQuota?: number;
  /**
   * Percentage of 5xx answers that raises the API alarm.
   * @default 5
   */
  readonly serverErrorRatePercent?: number;
}

/** Thrown for props that can't make a working stack; the message names the prop and the value. */
export class InvalidStackPropsError extends Error {
  override name = 'InvalidStackPropsError';
}

export const DEFAULT_THROTTLE: StageThrottle = { rateLimit: 1000, burstLimit: 2000 };
const RETENTION_VALUES = new Set(Object.values(logs.RetentionDays).filter((v) => typeof v === 'number'));

const fail = (message: string): never => {
  throw new InvalidStackPropsError(`BranchApiStack: ${message}`);
};
const isPositiveInteger = (value: unknown): value is number => Number.isInteger(value) && (value as number) > 0;
const show = (value: unknown) => JSON.stringify(value) ?? String(value);

/** Applies the defaults and rejects any value that would not make a working, sensible stack. */
export const resolveStackSettings = (props: BranchApiStackProps = {}) => {
  const throttle = { ...DEFAULT_THROTTLE, ...props.throttle };
  if (!isPositiveInteger(throttle.rateLimit)) {
    fail(`throttle.rateLimit must be a positive integer (requests per second), got ${show(throttle.rateLimit)}`);
  }
  if (!isPositiveInteger(throttle.burstLimit)) {
    fail(`throttle.burstLimit must be a positive integer (requests), got ${show(throttle.burstLimit)}`);
  }
  const logRetention = props.logRetention ?? logs.RetentionDays.ONE_MONTH;
  if (!RETENTION_VALUES.has(logRetention) || logRetention === logs.RetentionDays.INFINITE) {
    fail(
      `logRetention must be a finite CloudWatch Logs retention in days (${[...RETENTION_VALUES].filter(Boolean).join(', ')}), got ${show(props.logRetention)}`,
    );
  }
  const usageRetentionDays = props.usageRetentionDays ?? DEFAULT_USAGE_RETENTION_DAYS;
  if (!isPositiveInteger(usageRetentionDays)) {
    fail(`usageRetentionDays must be a positive integer, got ${show(props.usageRetentionDays)}`);
  }
  const defaultRateLimit = props.defaultRateLimit ?? DEFAULT_RATE_LIMIT;
  try {
    parseRateLimit(defaultRateLimit);
  } catch (error) {
    fail(`defaultRateLimit: ${(error as Error).message}, got ${show(props.defaultRateLimit)}`);
  }
  const logLevel = props.logLevel ?? 'INFO';
  if (!POWERTOOLS_LOG_LEVELS.includes(logLevel)) {
    fail(`logLevel must be one of ${POWERTOOLS_LOG_LEVELS.join(', ')}, got ${show(props.logLevel)}`);
  }
  const serverErrorRatePercent = props.serverErrorRatePercent ?? 5;
  if (!(serverErrorRatePercent > 0 && serverErrorRatePercent < 100)) {
    fail(`serverErrorRatePercent must be between 0 and 100 (exclusive), got ${show(props.serverErrorRatePercent)}`);
  }
  if (props.alarmTopicArn !== undefined && !/^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[\w-]+$/.test(props.alarmTopicArn)) {
    fail(`alarmTopicArn must be an SNS topic ARN, got ${show(props.alarmTopicArn)}`);
  }
  if (props.alarmEmail !== undefined && !/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(props.alarmEmail)) {
    fail(`alarmEmail must be an e-mail address, got ${show(props.alarmEmail)}`);
  }
  const reservedConcurrency = props.reservedConcurrency ?? {};
  const lambdaConcurrencyQuota = props.lambdaConcurrencyQuota ?? DEFAULT_CONCURRENCY_QUOTA;
  const [concurrency] = concurrencyProblems(reservedConcurrency, lambdaConcurrencyQuota, (kind) =>
    kind === 'endpoint' ? routes.length : 1,
  );
  if (concurrency) fail(concurrency);
  return {
    throttle,
    reservedConcurrency,
    lambdaConcurrencyQuota,
    ...(props.alarmEmail ? { alarmEmail: props.alarmEmail } : {}),
    logRetention,
    destroyData: props.destroyData ?? false,
    usageRetentionDays,
    defaultRateLimit,
    logLevel,
    tracing: props.tracing ?? true,
    ...(props.alarmTopicArn ? { alarmTopicArn: props.alarmTopicArn } : {}),
    serverErrorRatePercent,
  };
};

export type ResolvedStackSettings = ReturnType<typeof resolveStackSettings>;

const lambdasOf = <K extends string>(functions: Readonly<Record<K, ApiFunction>>) =>
  Object.fromEntries(Object.entries<ApiFunction>(functions).map(([name, fn]) => [name, fn.function])) as Record<
    K,
    ApiFunction['function']
  >;

export class BranchApiStack extends Stack {
  readonly settings: ResolvedStackSettings;
  readonly tables: DataTables;
  readonly functions: Readonly<Record<RouteId, ApiFunction>>;
  readonly fallback: ApiFunction;
  readonly api: BranchHttpApi;
  readonly monitoring: Monitoring;
  /** The usage table's stream feeding the rollups (lib/infra/usage-aggregation.ts). */
  readonly usageAggregation: UsageAggregation;
  /** Key events bus and the daily "Key Expiring" run (lib/infra/key-events.ts). */
  readonly keyEvents: KeyEvents;
  /** POST /security/secret-scanning (lib/infra/secret-scanning.ts). */
  readonly secretScanning: SecretScanning;
  /** The keys table's stream finishing key actions (lib/infra/key-actions-stream.ts). */
  readonly keyActionsStream: KeyActionsStream;

  constructor(scope: Construct, id: string, props: BranchApiStackProps = {}) {
    const settings = resolveStackSettings(props);
    super(scope, id, {
      description: 'Branch API: read-only bearer-key HTTP API (API Gateway HTTP API, Lambda, DynamoDB)',
      ...props,
    });
    this.settings = settings;
    Tags.of(this).add('service', 'branch-api');

    this.tables = new DataTables(this, 'Tables', { destroyData: settings.destroyData });

    const { logRetention, logLevel, tracing } = settings;
    const functionOptions = { logRetention, logLevel, tracing };
    const reserved = settings.reservedConcurrency;
    this.functions = Object.fromEntries(
      routes.map((route) => [
        route.id,
        new ApiFunction(this, route.id, {
          entry: route.entry,
          reservedConcurrency: reserved.endpoint,
          ...functionOptions,
        }).bindTables(this.tables, settings.usageRetentionDays, tableAccessOf(route), settings.defaultRateLimit),
      ]),
    ) as Record<RouteId, ApiFunction>;
    this.fallback = new ApiFunction(this, 'Fallback', {
      entry: fallbackEntry,
      memorySize: FALLBACK_MEMORY_MB,
      timeout: FALLBACK_TIMEOUT,
      reservedConcurrency: reserved.fallback,
      ...functionOptions,
    });

    this.api = new BranchHttpApi(this, 'Api', {
      routes,
      functions: lambdasOf(this.functions),
      fallback: this.fallback.function,
      throttle: settings.throttle,
      accessLogRetention: settings.logRetention,
    });

    // Leaked keys and key events: their own constructs; every function that emits gets the bus.
    this.keyEvents = new KeyEvents(this, 'KeyEvents', {
      keysTable: this.tables.keys,
      reservedConcurrency: reserved.keyExpiry,
      ...functionOptions,
    });
    this.secretScanning = new SecretScanning(this, 'SecretScanning', {
      tables: this.tables,
      httpApi: this.api.httpApi,
      usageRetentionDays: settings.usageRetentionDays,
      defaultRateLimit: settings.defaultRateLimit,
      reservedConcurrency: reserved.secretScanning,
      ...functionOptions,
    });
    this.keyEvents.emitFrom([...Object.values<ApiFunction>(this.functions), this.secretScanning.function]);

    const topic = this.alarmTopic(settings);
    // Read by the stack's nag rules (lib/infra/nag): alarms must notify when the deployer gave
    // somewhere to send them, and reservations must fit the quota the deployer stated.
    const intent = {
      ...(topic ? { alarmTopic: true } : {}),
      ...(props.lambdaConcurrencyQuota !== undefined ? { [QUOTA_OPTION]: settings.lambdaConcurrencyQuota } : {}),
    };
    if (Object.keys(intent).length > 0) this.templateOptions.metadata = { BranchApi: intent };
    const alarmTopic = topic ? { alarmTopic: topic } : {};
    this.usageAggregation = new UsageAggregation(this, 'UsageAggregation', {
      usageTable: this.tables.usage,
      rollupsTable: this.tables.rollups,
      ...(props.rollupRetentionDays !== undefined ? { rollupRetentionDays: props.rollupRetentionDays } : {}),
      reservedConcurrency: reserved.aggregator,
      ...functionOptions,
      ...alarmTopic,
    });
    this.keyActionsStream = new KeyActionsStream(this, 'KeyActionsStream', {
      keysTable: this.tables.keys,
      activityTable: this.tables.activity,
      keyEvents: this.keyEvents,
      reservedConcurrency: reserved.keyActions,
      ...functionOptions,
      ...alarmTopic,
    });

    this.recordConcurrencyRequests(reserved);
    this.monitoring = this.monitor(settings, alarmTopic);
    this.addOutputs();
    // Acknowledged findings go into the template with their reasons, where verify:assembly reads them.
    Aspects.of(this).add(new WriteNagSuppressionsToCloudFormationAspect());
  }

  /** What each function kind asked to reserve, on its functions' resources (lib/infra/concurrency.ts). */
  private recordConcurrencyRequests(reserved: ReservedConcurrency): void {
    recordRequests(
      {
        endpoint: Object.values<ApiFunction>(this.functions).map((fn) => fn.function),
        fallback: [this.fallback.function],
        aggregator: [this.usageAggregation.function.function],
        secretScanning: [this.secretScanning.function.function],
        keyExpiry: [this.keyEvents.expiry.function],
        keyActions: [this.keyActionsStream.function.function],
      },
      reserved,
    );
  }

  /** The API's alarms, the failure metrics' and the key expiry run's (lib/infra/monitoring.ts). */
  private monitor(settings: ResolvedStackSettings, alarmTopic: { alarmTopic?: sns.ITopic }): Monitoring {
    return new Monitoring(this, 'Monitoring', {
      stage: this.api.stage,
      unwatchedFunctions: { KeyExpiry: this.keyEvents.expiry.function },
      serverErrorRatePercent: settings.serverErrorRatePercent,
      ...alarmTopic,
    });
  }

  /** The base URL, and everything the operator tooling reads (lib/operator/target.ts): one output each. */
  private addOutputs(): void {
    new CfnOutput(this, 'ApiBaseUrl', {
      value: this.api.baseUrl,
      description: '{base_url} of the API (the invoke URL of the `api` stage)',
    });
    const values = new Map<string, string>([
      ...OPERATOR_TABLES.map((name) => [operatorTableOutput(name), this.tables[name].tableName] as const),
      [KEY_EVENT_BUS_OUTPUT.output, this.keyEvents.bus.eventBusName],
    ]);
    for (const { output, envVar, what } of OPERATOR_OUTPUTS) {
      const value = values.get(output);
      if (value === undefined) throw new Error(`No value for the operator output ${output}`);
      new CfnOutput(this, output, { value, description: `${envVar}: ${what}` });
    }
  }

  /** The deployer's topic, or one with their e-mail subscribed; none at all is a loud synth warning. */
  private alarmTopic(settings: ResolvedStackSettings): sns.ITopic | undefined {
    if (settings.alarmTopicArn) return sns.Topic.fromTopicArn(this, 'AlarmTopic', settings.alarmTopicArn);
    if (settings.alarmEmail) {
      const topic = new sns.Topic(this, 'AlarmTopic', { enforceSSL: true, displayName: `${this.stackName} alarms` });
      topic.addSubscription(new subscriptions.EmailSubscription(settings.alarmEmail));
      Validations.of(topic).acknowledge({
        id: 'AwsSolutions-SNS2',
        reason:
          'CloudWatch alarms cannot publish to a topic encrypted with the AWS managed SNS key, and alarm ' +
          'notifications carry no data beyond the alarm name and state.',
      });
      return topic;
    }
    Annotations.of(this).addWarningV2(
      'branch-api:no-alarm-topic',
      'NO ALARM TOPIC: the alarms of this stack notify nobody. Deploy with -c alarmTopicArn=<SNS topic ARN> ' +
        'or -c alarmEmail=<address> (docs/deploy.md "Alarms").',
    );
    return undefined;
  }
}
