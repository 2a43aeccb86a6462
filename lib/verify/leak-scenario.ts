/**
 * The verifier's part for leaked keys and key events (docs/decisions.md "Leaked keys", "Key
 * events"): the report route gets signed reports instead of bearer-key cases, each function an
 * EventBridge schedule invokes (the daily "Key Expiring" run) gets a scheduled event (the grants
 * to put key events are judged in lib/verify/observed.ts).
 *
 * One variable of the template is replaced: SECRET_SCANNING_KEYS_URL. GitHub's keys can't sign
 * here, so the run signs with a key pair made as the local stack makes its own
 * (lib/local/key-events-setup.ts), published as a keys document behind a `file:` URL.
 */
import { randomUUID, sign } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { routeKey, secretScanningRoute } from '../../shared/api/routes';
import { MAX_REPORT_BYTES } from '../../shared/domain/secret-scanning';
import { LOCAL_SIGNING_KEY_ID, setUpLocalKeyEvents } from '../local/key-events-setup';
import { LOCAL_REGION, type Assembly, type Json, type TemplateFunction } from './assembly';

export const REPORT_ROUTE_KEY = routeKey(secretScanningRoute);
const KEYS_URL_ENV = 'SECRET_SCANNING_KEYS_URL';

/** Signs a report body as GitHub does: the headers that go with it. */
export type Signer = (body: string) => Record<string, string>;

/** Points every function that reads SECRET_SCANNING_KEYS_URL at the local stack's own key pair; returns its signer. */
export const useOwnSigningKey = (functions: readonly TemplateFunction[]): Signer => {
  const { secretScanningKeysUrl, signingKeyFile } = setUpLocalKeyEvents(undefined, {});
  const privateKey = readFileSync(signingKeyFile!);
  for (const fn of functions) {
    if (fn.environment[KEYS_URL_ENV] !== undefined) fn.environment[KEYS_URL_ENV] = secretScanningKeysUrl;
  }
  return (body: string): Record<string, string> => ({
    'content-type': 'application/json',
    'github-public-key-identifier': LOCAL_SIGNING_KEY_ID,
    'github-public-key-signature': sign('sha256', Buffer.from(body), privateKey).toString('base64'),
  });
};

/** Adds one call on the report route (the scenario's own case builder). */
type ReportCase = (
  label: string,
  expected: number,
  request: { body: string; headers: Record<string, string>; code?: string },
) => void;

/** The report route's cases: a live key reported (twice), and each refusal. */
export const reportCases = (signed: Signer, leakedKey: string, at: ReportCase): void => {
  const report = JSON.stringify([
    { token: leakedKey, type: 'branch_api_key', url: 'https://verify.local', source: 'content' },
  ]);
  const request = (body: string, code?: string) => ({ body, headers: signed(body), ...(code ? { code } : {}) });
  const unsigned = { 'content-type': 'application/json' };
  at('a signed report of a live key', 200, request(report));
  at('the same report again', 200, request(report));
  at('an unsigned report', 401, { ...request(report, 'invalid_signature'), headers: unsigned });
  at('a report over 1 MB', 413, request(`[${' '.repeat(MAX_REPORT_BYTES)}]`, 'payload_too_large'));
  at('a signed report that is not an array', 400, request('{"token":"x"}', 'invalid_request'));
};

/** Logical ids of the functions an EventBridge schedule rule invokes. */
export const scheduledFunctions = (assembly: Assembly): string[] =>
  Object.values(assembly.resources)
    .filter((resource: Json) => resource.Type === 'AWS::Events::Rule' && resource.Properties?.ScheduleExpression)
    .flatMap((resource: Json) => (resource.Properties?.Targets ?? []) as Json[])
    .map((target) => (target.Arn as Json | undefined)?.['Fn::GetAtt']?.[0] as string | undefined)
    .filter((id): id is string => id !== undefined);

/** The event EventBridge Scheduler rules deliver. */
export const scheduledEvent = () => ({
  version: '0',
  id: randomUUID(),
  'detail-type': 'Scheduled Event',
  source: 'aws.events',
  account: '000000000000',
  time: new Date().toISOString(),
  region: LOCAL_REGION,
  resources: [],
  detail: {},
});
