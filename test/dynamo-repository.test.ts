/**
 * DynamoRepository.run (shared/data/dynamodb.ts) turns every failure of an SDK call into a domain
 * error, whether the call rejects or throws before it returns a promise. The calls here are
 * functions that fail on purpose (fault injection, no SDK): what is tested is the translation.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DynamoRepository } from '../shared/data/dynamodb';
import { ConditionNotMetError, DataStoreError, DataStoreUnavailableError } from '../shared/data/data-store-errors';

class Probe extends DynamoRepository {
  constructor() {
    super({} as DynamoDBDocumentClient, 'probe');
  }
  call<T>(fn: () => Promise<T>): Promise<T> {
    return this.run('GetItem', fn);
  }
}

const sdkError = (name: string) => Object.assign(new Error(`${name} from the SDK`), { name });
const failures = [
  ['ThrottlingException', DataStoreUnavailableError],
  ['ConditionalCheckFailedException', ConditionNotMetError],
  ['ValidationException', DataStoreError],
] as const;

describe.each(failures)('a call failing with %s', (name, domainError) => {
  it('rejects with the domain error when the call rejects', async () => {
    await expect(new Probe().call(() => Promise.reject(sdkError(name)))).rejects.toBeInstanceOf(domainError);
  });

  it('rejects with the domain error when the call throws before returning a promise', async () => {
    const throwing = (): Promise<never> => {
      throw sdkError(name);
    };
    const result = new Probe().call(throwing);
    await expect(result).rejects.toBeInstanceOf(domainError);
    await expect(result).rejects.toMatchObject({ message: expect.stringContaining('DynamoDB GetItem') });
  });
});

it('resolves with what the call resolves with', async () => {
  await expect(new Probe().call(async () => ({ Item: { id: 1 } }))).resolves.toEqual({ Item: { id: 1 } });
});
