/**
 * Key events deployed (docs/decisions.md "Key events"): an EventBridge bus the functions that emit
 * may put events on (and nothing else may), and the daily scheduled function that sends
 * "Key Expiring" for keys within 7 days of expiry. Subscribers add their own rules to the bus.
 */
import { Duration } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import { KEYS_BY_ID_INDEX, TABLE_ENV } from '../../shared/data/tables';
import { ApiFunction, loggingOf, type FunctionLogging } from './api-function';

/** The handler of the daily "Key Expiring" run. */
export const KEY_EXPIRY_ENTRY = 'functions/key-expiry-events.ts';
/** The environment variable naming the bus to a function that emits. */
export const KEY_EVENT_BUS_ENV = 'KEY_EVENT_BUS_NAME';

export interface KeyEventsProps extends FunctionLogging {
  /**
   * Concurrent executions reserved for its function (lib/infra/concurrency.ts).
   * @default - none
   */
  readonly reservedConcurrency?: number;
  /** The keys table the daily run scans. */
  readonly keysTable: dynamodb.ITable;
  /**
   * When the daily run starts.
   * @default 06:00 UTC every day
   */
  readonly schedule?: events.Schedule;
}

export class KeyEvents extends Construct {
  readonly bus: events.EventBus;
  /** Sends "Key Expiring" once a day. */
  readonly expiry: ApiFunction;
  readonly schedule: events.Rule;

  constructor(scope: Construct, id: string, props: KeyEventsProps) {
    super(scope, id);
    this.bus = new events.EventBus(this, 'Bus', {
      description: 'Branch API key events (source branch-api): created, updated, rolled, revoked, leaked, ...',
    });

    this.expiry = new ApiFunction(this, 'Expiry', {
      entry: KEY_EXPIRY_ENTRY,
      // A Scan of the keys table and one conditional write per expiring key.
      timeout: Duration.minutes(5),
      reservedConcurrency: props.reservedConcurrency,
      ...loggingOf(props),
    });
    const { tableArn, tableName } = props.keysTable;
    this.expiry.function.addEnvironment(TABLE_ENV.keys, tableName);
    // listExpiring (Scan), claimExpiringEvent (Query by key id, then UpdateItem): no more.
    this.expiry.role.addToPolicy(
      new iam.PolicyStatement({ actions: ['dynamodb:Scan', 'dynamodb:UpdateItem'], resources: [tableArn] }),
    );
    this.expiry.role.addToPolicy(
      new iam.PolicyStatement({ actions: ['dynamodb:Query'], resources: [`${tableArn}/index/${KEYS_BY_ID_INDEX}`] }),
    );
    this.emitFrom([this.expiry]);

    this.schedule = new events.Rule(this, 'Daily', {
      description: 'Key Expiring events, once a day',
      schedule: props.schedule ?? events.Schedule.cron({ minute: '0', hour: '6' }),
      targets: [new targets.LambdaFunction(this.expiry.function, { retryAttempts: 2 })],
    });
  }

  /** Lets each function put events on the bus (events:PutEvents on it only) and tells it the bus name. */
  emitFrom(functions: readonly ApiFunction[]): void {
    for (const fn of functions) {
      fn.function.addEnvironment(KEY_EVENT_BUS_ENV, this.bus.eventBusName);
      fn.role.addToPolicy(
        new iam.PolicyStatement({ actions: ['events:PutEvents'], resources: [this.bus.eventBusArn] }),
      );
    }
  }
}
