/**
 * Key events at least once, in order, deployed (docs/decisions.md "Key events"): the keys table's
 * stream feeds functions/finish-key-actions.ts, which finishes the outbox of a key whose actor died
 * after its key write or could not send. Only records whose new image has an entry in its outbox
 * invoke it. A failing batch is split, retried a bounded number of times, then its pointer goes to
 * a dead-letter queue (the entries stay on their key items for the next finisher). Alarms on the
 * queue and on the iterator age (lib/infra/stream-consumer.ts).
 */
import { Duration } from 'aws-cdk-lib';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import type { DynamoEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { TABLE_ENV } from '../../shared/data/tables';
import { ApiFunction, loggingOf, type FunctionLogging } from './api-function';
import type { KeyEvents } from './key-events';
import { consumeStream } from './stream-consumer';

export const KEY_ACTIONS_ENTRY = 'functions/finish-key-actions.ts';
/**
 * The records that invoke it: items with at least one entry in their outbox. The outbox is a list,
 * which Lambda's filtering crushes: a field under it matches if any element has it.
 */
export const PENDING_ENTRY_PATTERN = {
  dynamodb: { NewImage: { outbox: { L: { M: { activity_id: { S: [{ exists: true }] } } } } } },
};
/** Behind the stream by more than this, key events go out late: alarmed. */
const MAX_ITERATOR_AGE = Duration.seconds(60);

export interface KeyActionsStreamProps extends FunctionLogging {
  /** The keys table; it must have a stream (NEW_IMAGE). */
  readonly keysTable: dynamodb.ITable;
  readonly activityTable: dynamodb.ITable;
  /** The bus the function sends the actions' events to. */
  readonly keyEvents: KeyEvents;
  /**
   * Concurrent executions reserved for its function (lib/infra/concurrency.ts).
   * @default - none
   */
  readonly reservedConcurrency?: number;
  /** @default - no alarm actions */
  readonly alarmTopic?: sns.ITopic;
}

export class KeyActionsStream extends Construct {
  readonly function: ApiFunction;
  readonly deadLetterQueue: sqs.Queue;
  readonly eventSource: DynamoEventSource;
  readonly alarms: cloudwatch.Alarm[];

  constructor(scope: Construct, id: string, props: KeyActionsStreamProps) {
    super(scope, id);
    if (!props.keysTable.tableStreamArn) throw new Error('KeyActionsStream: the keys table has no stream');
    this.function = new ApiFunction(this, 'Finisher', {
      entry: KEY_ACTIONS_ENTRY,
      // A batch of ten: per record a GetItem, then per entry a PutItem, PutEvents and an UpdateItem, each bounded.
      timeout: Duration.seconds(30),
      reservedConcurrency: props.reservedConcurrency,
      ...loggingOf(props),
      environment: {
        [TABLE_ENV.keys]: props.keysTable.tableName,
        [TABLE_ENV.activity]: props.activityTable.tableName,
      },
    });
    // The calls finishKey makes (shared/data/repositories/key-outbox.ts): no Query, no index.
    const { role } = this.function;
    role.addToPolicy(
      new iam.PolicyStatement({
        actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem'],
        resources: [props.keysTable.tableArn],
      }),
    );
    role.addToPolicy(
      new iam.PolicyStatement({ actions: ['dynamodb:PutItem'], resources: [props.activityTable.tableArn] }),
    );
    props.keyEvents.emitFrom([this.function]);

    ({
      deadLetterQueue: this.deadLetterQueue,
      eventSource: this.eventSource,
      alarms: this.alarms,
    } = consumeStream(this, this.function, {
      table: props.keysTable,
      tableName: 'the keys table',
      batchSize: 10,
      maxBatchingWindow: Duration.seconds(1),
      retryAttempts: 10,
      maxRecordAge: Duration.hours(6),
      filter: PENDING_ENTRY_PATTERN,
      recovery:
        'its entries stay pending on their key items, finished by the key\u2019s next action or an activity read.',
      maxIteratorAge: MAX_ITERATOR_AGE,
      lagDescription: `Key events are more than ${MAX_ITERATOR_AGE.toHumanString()} behind the keys table's stream.`,
      deadLettersDescription:
        'Key actions could not be finished past their retries (their events unsent, see the "Key event not sent" ' +
        'log); the entries stay on their keys: reading the branch\u2019s activity finishes them (docs/decisions.md "Key events").',
      topic: props.alarmTopic,
    }));
  }
}
