/**
 * The rollups pipeline as synthesized: the usage table's stream, the event source mapping
 * (batching, bisect, bounded retries, batch item failures, dead-letter queue), the aggregator
 * function and its role, the queue, the alarms; invalid props refused.
 */
import { Duration, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import { UsageAggregation, type UsageAggregationProps } from '../../lib/infra/usage-aggregation';
import { buildStack, logicalId, newApp, resourcesOfType, roleGrants, streamConsumerActions } from './support';

const { stack, template } = buildStack();
const aggregation = stack.usageAggregation;
const usage = logicalId(stack.tables.usage);
const rollups = logicalId(stack.tables.rollups);
const queue = logicalId(aggregation.deadLetterQueue);

describe('the usage table stream', () => {
  it('carries new images', () => {
    expect(resourcesOfType(template, 'AWS::DynamoDB::Table')[usage]!.Properties.StreamSpecification).toEqual({
      StreamViewType: 'NEW_IMAGE',
    });
  });

  it('feeds the aggregator inserted records only, in batches, split on error, retried a bounded number of times for a bounded age, then dead-lettered', () => {
    const mappings = Object.values(resourcesOfType(template, 'AWS::Lambda::EventSourceMapping')).filter(
      (mapping) => mapping.Properties.EventSourceArn['Fn::GetAtt'][0] === usage,
    );
    expect(mappings).toHaveLength(1);
    expect(mappings[0]!.Properties).toEqual({
      FunctionName: { Ref: logicalId(aggregation.function.function) },
      EventSourceArn: { 'Fn::GetAtt': [usage, 'StreamArn'] },
      StartingPosition: 'TRIM_HORIZON',
      BatchSize: 100,
      MaximumBatchingWindowInSeconds: 30,
      BisectBatchOnFunctionError: true,
      MaximumRetryAttempts: 5,
      MaximumRecordAgeInSeconds: 6 * 3600,
      // TTL deletions (REMOVE) and any other event never invoke it.
      FilterCriteria: { Filters: [{ Pattern: '{"eventName":["INSERT"]}' }] },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [queue, 'Arn'] } } },
      Tags: [{ Key: 'service', Value: 'branch-api' }],
    });
  });
});

describe('the aggregator function', () => {
  const fn = resourcesOfType(template, 'AWS::Lambda::Function')[logicalId(aggregation.function.function)]!;

  it('runs on arm64, Node 24, with the rollups table and retention only', () => {
    expect(fn.Properties).toMatchObject({ Architectures: ['arm64'], Runtime: 'nodejs24.x', Handler: 'index.handler' });
    const variables = fn.Properties.Environment.Variables;
    expect(variables).toMatchObject({ ROLLUPS_TABLE: { Ref: rollups }, ROLLUP_RETENTION_DAYS: '400' });
    expect(Object.keys(variables).filter((name) => name.endsWith('_TABLE'))).toEqual(['ROLLUPS_TABLE']);
  });

  it('may GetItem and UpdateItem the rollups, read the usage stream and send to its queue: nothing else', () => {
    const { actions, allowed } = roleGrants(template, aggregation.function.role);
    expect(actions).toEqual(streamConsumerActions('dynamodb:GetItem', 'dynamodb:UpdateItem'));
    expect(allowed('dynamodb:UpdateItem')).toEqual([{ 'Fn::GetAtt': [rollups, 'Arn'] }]);
    expect(allowed('dynamodb:GetRecords')).toEqual([{ 'Fn::GetAtt': [usage, 'StreamArn'] }]);
    expect(allowed('sqs:SendMessage')).toEqual([{ 'Fn::GetAtt': [queue, 'Arn'] }]);
  });
});

describe('the dead-letter queue', () => {
  it('is encrypted, refuses plain HTTP and keeps messages 14 days', () => {
    expect(resourcesOfType(template, 'AWS::SQS::Queue')[queue]!.Properties).toMatchObject({
      SqsManagedSseEnabled: true,
      MessageRetentionPeriod: 14 * 86_400,
    });
    const policy = Object.values(resourcesOfType(template, 'AWS::SQS::QueuePolicy'))[0]!;
    expect(policy.Properties.PolicyDocument.Statement).toContainEqual(
      expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
    );
  });
});

describe('alarms', () => {
  const alarmOf = (metricName: string) =>
    Object.values(resourcesOfType(template, 'AWS::CloudWatch::Alarm')).find(
      (alarm) =>
        alarm.Properties.MetricName === metricName &&
        JSON.stringify(alarm.Properties.Dimensions).includes('UsageAggregation'),
    )!.Properties;

  it('fire when the aggregator is more than 60 s behind the stream', () => {
    expect(alarmOf('IteratorAge')).toMatchObject({
      Namespace: 'AWS/Lambda',
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: logicalId(aggregation.function.function) } }],
      Statistic: 'Maximum',
      Threshold: 60_000,
      ComparisonOperator: 'GreaterThanThreshold',
    });
  });

  it('fire on anything in the dead-letter queue', () => {
    expect(alarmOf('ApproximateNumberOfMessagesVisible')).toMatchObject({
      Namespace: 'AWS/SQS',
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [queue, 'QueueName'] } }],
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
    });
  });

  it('notify the alarm topic when there is one', () => {
    const withTopic = buildStack({ alarmTopicArn: 'arn:aws:sns:eu-west-1:123456789012:ops' }).template;
    const alarms = Object.values(resourcesOfType(withTopic, 'AWS::CloudWatch::Alarm')).filter(
      (alarm) =>
        ['IteratorAge', 'ApproximateNumberOfMessagesVisible'].includes(alarm.Properties.MetricName) &&
        JSON.stringify(alarm.Properties.Dimensions).includes('UsageAggregation'),
    );
    expect(alarms).toHaveLength(2);
    for (const alarm of alarms) {
      expect(alarm.Properties.AlarmActions).toEqual(['arn:aws:sns:eu-west-1:123456789012:ops']);
    }
  });
});

describe('props', () => {
  const build = (props: Partial<UsageAggregationProps>, stream = true) => {
    const scope = new Stack(newApp(), 'Props');
    const table = (id: string) =>
      new dynamodb.Table(scope, id, {
        partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING },
        ...(stream ? { stream: dynamodb.StreamViewType.NEW_IMAGE } : {}),
      });
    new UsageAggregation(scope, 'Aggregation', {
      usageTable: table('Usage'),
      rollupsTable: table('Rollups'),
      reservedConcurrency: 5,
      ...props,
    });
    return Template.fromStack(scope);
  };

  it('reach the mapping and the function', () => {
    const template = build({
      batchSize: 500,
      maxBatchingWindow: Duration.seconds(30),
      retryAttempts: 2,
      rollupRetentionDays: 30,
    });
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      BatchSize: 500,
      MaximumBatchingWindowInSeconds: 30,
      MaximumRetryAttempts: 2,
    });
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: { ROLLUP_RETENTION_DAYS: '30' } },
    });
  });

  it.each<[Partial<UsageAggregationProps>, RegExp]>([
    [{ batchSize: 0 }, /batchSize must be an integer from 1 to 1000, got 0/],
    [{ batchSize: 1.5 }, /batchSize/],
    [{ maxBatchingWindow: Duration.minutes(2) }, /maxBatchingWindow must be at most 60 s/],
    [{ retryAttempts: -1 }, /retryAttempts must be an integer from 0 to 10000, got -1/],
    [{ rollupRetentionDays: 0 }, /rollupRetentionDays must be a positive integer, got 0/],
  ])('refuse %j', (props, message) => {
    expect(() => build(props)).toThrow(message);
  });

  it('refuse a usage table without a stream', () => {
    expect(() => build({}, false)).toThrow('UsageAggregation: the usage table has no stream');
  });

  it('refuse a bad rollupRetentionDays on the stack', () => {
    expect(() => buildStack({ rollupRetentionDays: -3 })).toThrow(/rollupRetentionDays must be a positive integer/);
  });
});
