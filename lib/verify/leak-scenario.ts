/**
 * The verifier's part for leaked keys and key events (docs/decisions.md "Leaked keys", "Key
 * events"): the report route gets signed reports instead of bearer-key cases, each function an
 * EventBridge schedule invokes (the daily "Key Expiring" run) gets a scheduled event (the grants
 * to put key events are judged in lib/verify/observed.ts).
 *
 * One variable of the template is replaced: SECRET_SCANNING_KEYS_URL. GitHub's keys can't sign
 * here, so the run signs with a key pair of its own, published as a keys document behind a
 * `file:` URL, exactly as the local stack does.
 */
import { generateKeyPairSync, randomUUID, sign } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { routeKey, secretScanningRoute } from '../../shared/api/routes';
import { MAX_REPORT_BYTES } from '../../shared/domain/secret-scanning';
import { LOCAL_REGION, type Assembly, type Json, type TemplateFunction } from './assembly';

export const REPORT_ROUTE_KEY = routeKey(secretScanningRoute);
const KEYS_URL_ENV = 'SECRET_SCANNING_KEYS_URL';
const KEY_ID = 'verify';

export interface ReportCase {
  label: string;
  method: string;
  path: string;
  expected: number;
  code?: string;
  headers: Record<string, string>;
  body: string;
}

/** Points every function that reads SECRET_SCANNING_KEYS_URL at a key pair of this run; returns its signer. */
export type Signer = (body: string) => Record<string, string>;

export const useOwnSigningKey = (functions: readonly TemplateFunction[]): Signer => {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const file = join(mkdtempSync(join(tmpdir(), 'verify-keys-')), 'public_keys.json');
  const key = publicKey.export({ type: 'spki', format: 'pem' }).toString();
  writeFileSync(file, JSON.stringify({ public_keys: [{ key_identifier: KEY_ID, key, is_current: true }] }));
  for (const fn of functions) {
    if (fn.environment[KEYS_URL_ENV] !== undefined) fn.environment[KEYS_URL_ENV] = pathToFileURL(file).href;
  }
  return (body: string): Record<string, string> => ({
    'content-type': 'application/json',
    'github-public-key-identifier': KEY_ID,
    'github-public-key-signature': sign('sha256', Buffer.from(body), privateKey).toString('base64'),
  });
};

/** The report route's cases: a live key reported (twice), and each refusal. */
export const reportCases = (signed: (body: string) => Record<string, string>, leakedKey: string): ReportCase[] => {
  const report = JSON.stringify([
    { token: leakedKey, type: 'branch_api_key', url: 'https://verify.local', source: 'content' },
  ]);
  const notArray = '{"token":"x"}';
  const big = `[${' '.repeat(MAX_REPORT_BYTES)}]`;
  const at = (label: string, expected: number, body: string, headers: Record<string, string>, code?: string) => ({
    label: `${REPORT_ROUTE_KEY}: ${label}`,
    method: secretScanningRoute.method,
    path: secretScanningRoute.path,
    expected,
    body,
    headers,
    ...(code ? { code } : {}),
  });
  return [
    at('a signed report of a live key', 200, report, signed(report)),
    at('the same report again', 200, report, signed(report)),
    at('an unsigned report', 401, report, { 'content-type': 'application/json' }, 'invalid_signature'),
    at('a report over 1 MB', 413, big, signed(big), 'payload_too_large'),
    at('a signed report that is not an array', 400, notArray, signed(notArray), 'invalid_request'),
  ];
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
