/**
 * Key events at least once, deployed, as synthesized: the keys table's stream, the mapping (only
 * records that carry a pending entry; batching, bisect, bounded retries, batch item failures,
 * dead-letter queue), the function and its least-privilege role, the alarms.
 */
import { buildStack, logicalId, resourcesOfType, roleGrants, streamConsumerActions } from './support';

const { stack, template } = buildStack();
const finisher = stack.keyActionsStream;
const fnId = logicalId(finisher.function.function);
const keys = logicalId(stack.tables.keys);
const activity = logicalId(stack.tables.activity);
const queue = logicalId(finisher.deadLetterQueue);

it('the keys table carries new images on its stream', () => {
  expect(resourcesOfType(template, 'AWS::DynamoDB::Table')[keys]!.Properties.StreamSpecification).toEqual({
    StreamViewType: 'NEW_IMAGE',
  });
});

it('feeds the function only records whose new image carries a pending entry, split on error, retried, then dead-lettered', () => {
  const mapping = Object.values(resourcesOfType(template, 'AWS::Lambda::EventSourceMapping')).find(
    (candidate) => candidate.Properties.FunctionName.Ref === fnId,
  )!;
  expect(mapping.Properties).toEqual({
    FunctionName: { Ref: fnId },
    EventSourceArn: { 'Fn::GetAtt': [keys, 'StreamArn'] },
    StartingPosition: 'TRIM_HORIZON',
    BatchSize: 10,
    MaximumBatchingWindowInSeconds: 1,
    BisectBatchOnFunctionError: true,
    MaximumRetryAttempts: 10,
    MaximumRecordAgeInSeconds: 6 * 3600,
    FilterCriteria: {
      Filters: [
        { Pattern: '{"dynamodb":{"NewImage":{"outbox":{"L":{"M":{"activity_id":{"S":[{"exists":true}]}}}}}}}' },
      ],
    },
    FunctionResponseTypes: ['ReportBatchItemFailures'],
    DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [queue, 'Arn'] } } },
    Tags: [{ Key: 'service', Value: 'branch-api' }],
  });
});

it('may GetItem and UpdateItem keys, PutItem activity, PutEvents on the bus, read the keys stream: nothing else', () => {
  const fn = resourcesOfType(template, 'AWS::Lambda::Function')[fnId]!;
  expect(fn.Properties.Environment.Variables).toMatchObject({
    KEYS_TABLE: { Ref: keys },
    ACTIVITY_TABLE: { Ref: activity },
    KEY_EVENT_BUS_NAME: { Ref: logicalId(stack.keyEvents.bus) },
  });
  const { actions, allowed } = roleGrants(template, finisher.function.role);
  expect(actions).toEqual(
    streamConsumerActions('dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'events:PutEvents'),
  );
  expect(allowed('dynamodb:GetItem')).toEqual([{ 'Fn::GetAtt': [keys, 'Arn'] }]);
  expect(allowed('dynamodb:UpdateItem')).toEqual([{ 'Fn::GetAtt': [keys, 'Arn'] }]);
  expect(allowed('dynamodb:PutItem')).toEqual([{ 'Fn::GetAtt': [activity, 'Arn'] }]);
  expect(allowed('events:PutEvents')).toEqual([{ 'Fn::GetAtt': [logicalId(stack.keyEvents.bus), 'Arn'] }]);
  expect(allowed('dynamodb:GetRecords')).toEqual([{ 'Fn::GetAtt': [keys, 'StreamArn'] }]);
});

it('alarms when it falls 60 s behind the stream and on anything dead-lettered, to the topic when there is one', () => {
  const withTopic = buildStack({ alarmTopicArn: 'arn:aws:sns:eu-west-1:123456789012:ops' });
  const alarms = Object.values(resourcesOfType(withTopic.template, 'AWS::CloudWatch::Alarm')).map(
    (alarm) => alarm.Properties,
  );
  const ofFinisher = alarms.filter(
    (alarm) =>
      JSON.stringify(alarm.Dimensions ?? null).includes(
        logicalId(withTopic.stack.keyActionsStream.function.function),
      ) && alarm.MetricName === 'IteratorAge',
  );
  expect(ofFinisher).toEqual([expect.objectContaining({ Threshold: 60_000, Statistic: 'Maximum' })]);
  const deadLetters = alarms.filter((alarm) =>
    JSON.stringify(alarm.Dimensions ?? null).includes(logicalId(withTopic.stack.keyActionsStream.deadLetterQueue)),
  );
  expect(deadLetters).toEqual([
    expect.objectContaining({ MetricName: 'ApproximateNumberOfMessagesVisible', Threshold: 0 }),
  ]);
  for (const alarm of [...ofFinisher, ...deadLetters]) {
    expect(alarm.AlarmActions).toEqual(['arn:aws:sns:eu-west-1:123456789012:ops']);
  }
});
