/**
 * What the CLI says when DynamoDB does not answer: against a local endpoint, to check it and the
 * local stack; against a deployed stack, to check the region, the network and the credentials.
 * Nothing listens on port 9 of this machine, so every connection is refused.
 */
import { runCli } from '../support/cli';

const UNREACHABLE = 'http://127.0.0.1:9';

it('points at DYNAMODB_ENDPOINT and the local stack when a local endpoint does not answer', async () => {
  const result = await runCli(['keys', 'list', '--branch', 'br_demo', '--json'], {
    DYNAMODB_ENDPOINT: UNREACHABLE,
    DYNAMODB_MAX_ATTEMPTS: '1',
  });
  expect(result.code).toBe(1);
  expect(JSON.parse(result.stderr)).toEqual({
    error: {
      code: 'unavailable',
      message: 'DynamoDB is not reachable (is DYNAMODB_ENDPOINT right, is the local stack running?)',
    },
  });
});

it('points at the region, the network and the credentials when a deployed stack does not answer', async () => {
  const result = await runCli(['keys', 'list', '--branch', 'br_demo'], {
    DYNAMODB_ENDPOINT: '',
    // Where the SDK sends DynamoDB calls for this region: a deployed target that does not answer.
    AWS_ENDPOINT_URL_DYNAMODB: UNREACHABLE,
    AWS_REGION: 'eu-west-1',
    AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE',
    AWS_SECRET_ACCESS_KEY: 'example',
    KEY_EVENT_BUS_NAME: 'branch-api-key-events',
    DYNAMODB_MAX_ATTEMPTS: '1',
  });
  expect(result).toMatchObject({
    code: 1,
    stderr:
      'error: DynamoDB in eu-west-1 is not reachable (is the region right, can this machine reach AWS, ' +
      'and are your AWS credentials valid and not expired?)\n',
  });
});
