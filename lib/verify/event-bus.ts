/**
 * A stand-in EventBridge endpoint for the functions and the operator tooling the verifier runs: it
 * accepts every PutEvents (so a function whose work waits on its event being sent, the key actions
 * finisher, runs its whole path). Which roles may put on which bus is
 * checked from the template (lib/verify/scenario.ts); given a policy, it refuses a put on a
 * bus the policy does not allow, as EventBridge does.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { readBody } from '../local/forward';
import { listen } from '../local/listen';
import { LOCAL_ACCOUNT, LOCAL_REGION, type Json } from './assembly';
import { accessDeniedMessage, VERIFY_PRINCIPAL } from './recording-proxy';

const eventBusArn = (name: string): string =>
  name.startsWith('arn:') ? name : `arn:aws:events:${LOCAL_REGION}:${LOCAL_ACCOUNT}:event-bus/${name}`;

const PUT_EVENTS = 'events:PutEvents';

/** A stand-in on a free local port (AWS_ENDPOINT_URL_EVENTBRIDGE, _STS) answering each request's body. */
const standIn = async (answer: (body: string) => { status?: number; type?: string; body: string }) => {
  const server = createServer(async (request, response) => {
    const { status = 200, type = 'application/x-amz-json-1.1', body } = answer((await readBody(request)).toString());
    response.writeHead(status, { 'content-type': type }).end(body);
  });
  const port = await listen(server, 0, '127.0.0.1');
  return {
    endpoint: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
};

/** @param allows when given, the caller's policy: a put on a bus it refuses is AccessDeniedException. */
export const startEventBusStandIn = (allows?: (action: string, arn: string) => boolean) =>
  standIn((request) => {
    const put = ((JSON.parse(request || '{}') as Json).Entries ?? []) as Json[];
    const refused =
      allows &&
      put.map((entry) => eventBusArn(String(entry.EventBusName ?? 'default'))).find((arn) => !allows(PUT_EVENTS, arn));
    if (refused) {
      const body = { __type: 'AccessDeniedException', message: accessDeniedMessage(PUT_EVENTS, refused) };
      return { status: 400, body: JSON.stringify(body) };
    }
    return { body: JSON.stringify({ FailedEntryCount: 0, Entries: put.map(() => ({ EventId: randomUUID() })) }) };
  });

/**
 * A stand-in STS endpoint answering GetCallerIdentity (which needs no permission) with the
 * verifier's principal: the operator tooling records it as the actor of each key action.
 */
export const startCallerIdentityStandIn = () =>
  standIn(() => ({
    type: 'text/xml',
    body:
      '<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult>' +
      `<Arn>${VERIFY_PRINCIPAL}</Arn><UserId>AROAVERIFY:verify</UserId><Account>${LOCAL_ACCOUNT}</Account>` +
      '</GetCallerIdentityResult><ResponseMetadata><RequestId>verify</RequestId></ResponseMetadata></GetCallerIdentityResponse>',
  }));
