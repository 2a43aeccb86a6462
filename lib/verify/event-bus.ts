/**
 * A stand-in EventBridge endpoint for the functions and the operator tooling the verifier runs: it
 * accepts every PutEvents (so a function whose work waits on its event being sent, the key actions
 * finisher, runs its whole path) and keeps what was put. Which roles may put on which bus is
 * checked from the template (lib/verify/leak-scenario.ts); given a policy, it refuses a put on a
 * bus the policy does not allow, as EventBridge does.
 */
import { once } from 'node:events';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readBody } from '../local/forward';
import { LOCAL_ACCOUNT, LOCAL_REGION, type Json } from './assembly';
import { accessDeniedMessage, VERIFY_PRINCIPAL } from './recording-proxy';

export interface EventBusStandIn {
  /** For AWS_ENDPOINT_URL_EVENTBRIDGE. */
  readonly endpoint: string;
  /** Every entry put, as sent. */
  readonly entries: Json[];
  /** The bus ARNs of the puts the policy refused. */
  readonly denied: string[];
  close(): Promise<void>;
}

const eventBusArn = (name: string): string =>
  name.startsWith('arn:') ? name : `arn:aws:events:${LOCAL_REGION}:${LOCAL_ACCOUNT}:event-bus/${name}`;

const PUT_EVENTS = 'events:PutEvents';

const answer = (response: ServerResponse, status: number, body: Json) => {
  response.writeHead(status, { 'content-type': 'application/x-amz-json-1.1' });
  response.end(JSON.stringify(body));
};

/** An HTTP stand-in on a free local port, answering with `handle`. */
const standIn = async (handle: (body: Buffer, response: ServerResponse) => void) => {
  const server = createServer(async (request, response) => handle(await readBody(request), response));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
};

/** @param allows when given, the caller's policy: a put on a bus it refuses is AccessDeniedException. */
export const startEventBusStandIn = async (
  allows?: (action: string, arn: string) => boolean,
): Promise<EventBusStandIn> => {
  const entries: Json[] = [];
  const denied: string[] = [];
  const server = await standIn((body, response) => {
    const put = ((JSON.parse(body.toString('utf8') || '{}') as Json).Entries ?? []) as Json[];
    const refused =
      allows &&
      put.map((entry) => eventBusArn(String(entry.EventBusName ?? 'default'))).find((arn) => !allows(PUT_EVENTS, arn));
    if (refused) {
      denied.push(refused);
      return answer(response, 400, {
        __type: 'AccessDeniedException',
        message: accessDeniedMessage(PUT_EVENTS, refused),
      });
    }
    entries.push(...put);
    answer(response, 200, {
      FailedEntryCount: 0,
      Entries: put.map((_: unknown, i: number) => ({ EventId: `verify-${entries.length + i}` })),
    });
  });
  return { ...server, entries, denied };
};

/**
 * A stand-in STS endpoint answering GetCallerIdentity (which needs no permission) with the
 * verifier's principal: the operator tooling records it as the actor of each key action.
 */
export const startCallerIdentityStandIn = () =>
  standIn((_body, response) => {
    response.writeHead(200, { 'content-type': 'text/xml' });
    response.end(
      '<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult>' +
        `<Arn>${VERIFY_PRINCIPAL}</Arn><UserId>AROAVERIFY:verify</UserId><Account>${LOCAL_ACCOUNT}</Account>` +
        '</GetCallerIdentityResult><ResponseMetadata><RequestId>verify</RequestId></ResponseMetadata></GetCallerIdentityResponse>',
    );
  });
