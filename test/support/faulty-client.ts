/**
 * A fault injected into a DynamoDB document client (a stub, for faults only): the UpdateItems of
 * rollup hour items that `fault` picks fail before they reach the table, or after they were
 * applied (the answer lost, as a timeout loses it). Every other call goes to the real embedded
 * DynamoDB unchanged.
 */
import { UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

export type HourUpdateFault = 'before' | 'after' | undefined;

export const faultyClient = (
  client: DynamoDBDocumentClient,
  fault: (input: { Key?: Record<string, unknown> }) => HourUpdateFault,
): DynamoDBDocumentClient =>
  new Proxy(client, {
    get(target, property, receiver) {
      if (property !== 'send') return Reflect.get(target, property, receiver) as unknown;
      return async (command: unknown, options?: unknown) => {
        const isHourUpdate = command instanceof UpdateCommand && String(command.input.Key?.sk).startsWith('h#');
        const when = isHourUpdate ? fault(command.input) : undefined;
        if (when === 'before') throw Object.assign(new Error('injected fault'), { name: 'InternalServerError' });
        const output = await (target.send as (c: unknown, o?: unknown) => Promise<unknown>)(command, options);
        if (when === 'after') throw Object.assign(new Error('injected fault'), { name: 'InternalServerError' });
        return output;
      };
    },
  });
