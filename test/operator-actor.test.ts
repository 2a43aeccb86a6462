/**
 * Who key actions are recorded as (lib/operator/actor.ts): the OS user on a local target, never
 * asking STS; against AWS the caller's ARN from STS GetCallerIdentity, asked once per process. A
 * small HTTP server stands in for STS (the SDK is pointed at it with AWS_ENDPOINT_URL_STS).
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { userInfo } from 'node:os';
import { actorResolver } from '../lib/operator/actor';

const ARN = 'arn:aws:iam::123456789012:user/ops-alice';
let server: Server;
let calls = 0;
let failNext = false;
const saved = { ...process.env };

beforeAll(async () => {
  server = createServer((request, response) => {
    calls += 1;
    request.resume();
    if (failNext) {
      failNext = false;
      response.statusCode = 403;
      response.setHeader('content-type', 'text/xml');
      response.end(
        '<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>no</Message></Error><RequestId>r-0</RequestId></ErrorResponse>',
      );
      return;
    }
    response.setHeader('content-type', 'text/xml');
    response.end(
      `<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult>` +
        `<Arn>${ARN}</Arn><UserId>AIDEXAMPLE</UserId><Account>123456789012</Account>` +
        `</GetCallerIdentityResult><ResponseMetadata><RequestId>r-1</RequestId></ResponseMetadata></GetCallerIdentityResponse>`,
    );
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  process.env.AWS_ENDPOINT_URL_STS = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  process.env.AWS_ACCESS_KEY_ID = 'AKIDEXAMPLE';
  process.env.AWS_SECRET_ACCESS_KEY = 'secret-example';
});
afterAll(async () => {
  process.env = saved;
  server.close();
  await once(server, 'close');
});
beforeEach(() => {
  calls = 0;
});

it('locally: the OS user, and STS is never asked', async () => {
  const actor = actorResolver({ AWS_REGION: 'eu-west-1' }, true);
  expect(await actor()).toBe(userInfo().username);
  expect(calls).toBe(0);
});

it('against AWS: the caller ARN, asked once however often it is needed', async () => {
  const actor = actorResolver({ AWS_REGION: 'eu-west-1' }, false);
  expect(calls).toBe(0); // lazily: nothing until an action needs it
  expect(await Promise.all([actor(), actor(), actor()])).toEqual([ARN, ARN, ARN]);
  expect(await actor()).toBe(ARN);
  expect(calls).toBe(1);
});

it('a failed look-up is not cached: the next action asks again', async () => {
  const actor = actorResolver({ AWS_REGION: 'eu-west-1' }, false);
  failNext = true;
  await expect(actor()).rejects.toThrow();
  expect(await actor()).toBe(ARN);
  expect(calls).toBe(2);
});
