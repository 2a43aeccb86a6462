/**
 * Permissions a template can be judged on alone, with IAM's semantics (./iam.ts): a stream
 * consumer's role may read its stream and send to its failure destination, a function told the
 * key events bus may put events on it, and no role may put key events without a function that
 * sends them. The calls the functions make are judged against their roles by the verifier's run.
 */
import { CfnEventBus } from 'aws-cdk-lib/aws-events';
import { CfnPolicy, CfnRole } from 'aws-cdk-lib/aws-iam';
import { CfnEventSourceMapping, CfnFunction } from 'aws-cdk-lib/aws-lambda';
import { CfnTopic } from 'aws-cdk-lib/aws-sns';
import type { IConstruct } from 'constructs';
import { evaluate, type Statement } from './iam';
import { asList, idOf, read, resourceOf, resourcesOf, rule, targetOf, text, type Json } from './rule';
import { streamOf } from './streams';

/** What Lambda reads a stream with, on the consumer's role (ListStreams has no resource-level permission). */
const STREAM_READS = ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator'];
const BUS_ENV = 'KEY_EVENT_BUS_NAME';

/** Every statement of a role, inline and attached, its resources as text. */
const statementsOf = (node: IConstruct, roleId: string | undefined): Statement[] => {
  const role = resourceOf(node, roleId, CfnRole);
  const documents: [Json | undefined, string][] = [
    ...(role
      ? asList<Json>(read(role, role.policies)).map((policy): [Json, string] => [policy.policyDocument, roleId!])
      : []),
    ...resourcesOf(node, CfnPolicy)
      .filter((policy) => asList(read(policy, policy.roles)).some((ref) => targetOf(policy, ref) === roleId))
      .map((policy): [Json, string] => [read(policy, policy.policyDocument), idOf(policy)]),
  ];
  const texts = (value: unknown) => (value === undefined ? undefined : asList(value).map((one) => text(one) ?? '?'));
  return documents.flatMap(([document, source]) =>
    asList<Json>(document?.Statement).map((statement, i) => ({
      ...statement,
      Resource: texts(statement.Resource),
      NotResource: texts(statement.NotResource),
      source: `${source} statement ${statement.Sid ?? i + 1}`,
    })),
  );
};

const busOf = (fn: CfnFunction): unknown => read(fn, fn.environment)?.variables?.[BUS_ENV];

export const permissionRules = [
  rule(
    CfnEventSourceMapping,
    'stream-permissions',
    "a stream consumer's role may read its stream and send to its failure destination (sqs:SendMessage or sns:Publish)",
    (mapping) => {
      const table = streamOf(mapping);
      const fn = resourceOf(mapping, targetOf(mapping, mapping.functionName), CfnFunction);
      if (!table || !fn) return undefined;
      const destination = read(mapping, mapping.destinationConfig)?.onFailure?.destination;
      const topic = resourceOf(mapping, targetOf(mapping, destination), CfnTopic);
      const requests = [
        ...STREAM_READS.map((action) => [action, `${table}.StreamArn`]),
        ...(destination ? [[topic ? 'sns:Publish' : 'sqs:SendMessage', text(destination) ?? '?']] : []),
      ];
      const statements = statementsOf(mapping, targetOf(fn, fn.role));
      return requests.flatMap(([action, arn]) => {
        const { allowed, reason } = evaluate(statements, action!, arn!);
        return allowed ? [] : [`its function's role may not ${action} on ${arn}: ${reason}`];
      });
    },
  ),
  rule(
    CfnFunction,
    'key-events-grant',
    `a function told a bus (${BUS_ENV}) may put events on it, a bus of the stack`,
    (fn) => {
      const bus = busOf(fn);
      if (bus === undefined) return undefined;
      const busId = targetOf(fn, bus);
      if (!resourceOf(fn, busId, CfnEventBus))
        return `${BUS_ENV} names ${text(bus)}, which is not an event bus of the stack`;
      const { allowed, reason } = evaluate(statementsOf(fn, targetOf(fn, fn.role)), 'events:PutEvents', `${busId}.Arn`);
      return allowed
        ? undefined
        : `sends key events to ${busId} but its role may not events:PutEvents on it: ${reason}`;
    },
  ),
  rule(CfnRole, 'key-events-senders', 'no role may put key events unless a function with it sends them', (role) => {
    const id = idOf(role);
    const sends = resourcesOf(role, CfnFunction).some((fn) => targetOf(fn, fn.role) === id && busOf(fn) !== undefined);
    const statements = statementsOf(role, id);
    return !sends &&
      resourcesOf(role, CfnEventBus).some((bus) => evaluate(statements, 'events:PutEvents', `${idOf(bus)}.Arn`).allowed)
      ? 'events:PutEvents is granted but no function with this role sends key events'
      : undefined;
  }),
];
