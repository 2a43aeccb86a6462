/**
 * Jest-side helpers shared by the reliability suites: log capture across several containers,
 * the usage audit against table + error logs, the secret-hygiene dump, and response checks that
 * work for both a direct invoke and a raw HTTP response.
 */
import { captureLogs, fixtureClient, scanRaw, tableNames } from '../../support/harness';
import {
  loggedUsageRecords,
  scanAll,
  unattributedRequests,
  type LogEntry,
  type SeenRecord,
  type UsageAudit,
  type UsageLedger,
} from '../../../bench/reliability/ledger';
import type { SecretFinding, SecretTracker } from '../../../bench/reliability/secrets';
import { headerValue } from '../../../bench/lib/load';

const realStderrWrite = process.stderr.write.bind(process.stderr);

/**
 * Prints a figure line straight to stderr, past the log capture (which swallows console output
 * when jest runs one file in band), so every run shows its figures.
 */
export const report = (text: string): void => {
  realStderrWrite(`[reliability] ${text}\n`);
};

/** Captures stdout/stderr and turns every given container's logger to DEBUG until restore(). */
export const captureAllLogs = (loggers: Parameters<typeof captureLogs>[0]) => {
  const capture = captureLogs(loggers, 'DEBUG');
  return { capture, add: capture.add, restore: capture.restore };
};

/** The ledger against this file's usage table and the captured logs. */
export const auditUsage = async (ledger: UsageLedger, entries: LogEntry[] = []): Promise<UsageAudit> => {
  const table = (await scanAll(fixtureClient, tableNames.usage)) as SeenRecord[];
  return ledger.audit(table, loggedUsageRecords(entries), unattributedRequests(entries));
};

/** Only the counts of an audit that must be zero, for one readable assertion. */
export const auditProblems = (audit: UsageAudit) => ({
  lost: audit.lost.length,
  unexpected: audit.unexpected.length,
  duplicates: audit.duplicates.length,
  mismatched: audit.mismatched.length,
});

export interface HygieneReport {
  bytesSearched: number;
  keys: number;
  authorizations: number;
  findings: SecretFinding[];
}

/** Raw dumps of this file's three tables plus the captured log text, searched for every tracked secret. */
export const secretHygiene = async (tracker: SecretTracker, logText: string): Promise<HygieneReport> => {
  const dumps = await Promise.all(
    [tableNames.keys, tableNames.usage, tableNames.branchData].map(async (name) => JSON.stringify(await scanRaw(name))),
  );
  const haystack = [...dumps, logText].join('\n');
  return { bytesSearched: haystack.length, ...tracker.counts, findings: tracker.findIn(haystack) };
};

export interface AnyResponse {
  status: number;
  headers: Record<string, string | undefined>;
  body: string;
  json: any;
  requestId: string;
}

const header = (res: AnyResponse, name: string) => headerValue(res.headers, name);

export const CHALLENGE = 'Bearer realm="branch-api"';
export const INVALID_TOKEN = 'Bearer realm="branch-api", error="invalid_token"';
export const INSUFFICIENT_SCOPE = 'Bearer realm="branch-api", error="insufficient_scope", scope="read"';

/** The WWW-Authenticate / Allow / Retry-After a documented status+code carries (undefined: absent). */
export const documentedHeaders = (status: number, code?: string): Record<string, string | undefined> => ({
  'www-authenticate':
    code === 'missing_api_key'
      ? CHALLENGE
      : status === 401
        ? INVALID_TOKEN
        : status === 403
          ? INSUFFICIENT_SCOPE
          : undefined,
  allow: status === 405 ? 'GET' : undefined,
  'retry-after': status === 503 ? '1' : undefined,
});

/**
 * What the contract says every response of this status and code looks like, as one comparable
 * object: the common headers, the row's own headers, and for an error exactly
 * {error:{code,message,request_id}} with request_id = X-Request-Id. Bodies never carry a stack.
 */
export const shapeOf = (res: AnyResponse, withBody = true) => ({
  status: res.status,
  headers: {
    'content-type': header(res, 'content-type'),
    'cache-control': header(res, 'cache-control'),
    'x-content-type-options': header(res, 'x-content-type-options'),
    'x-request-id': header(res, 'x-request-id'),
    'www-authenticate': header(res, 'www-authenticate'),
    allow: header(res, 'allow'),
    'retry-after': header(res, 'retry-after'),
  },
  ...(withBody && res.status >= 400
    ? {
        body: res.json,
        stackLike: /\n\s+at |Exception|DynamoDB/.test(res.body),
      }
    : {}),
});

export const expectedShape = (res: AnyResponse, status: number, code?: string, withBody = true) => ({
  status,
  headers: {
    'content-type': 'application/json; charset=utf-8',
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    'x-request-id': res.requestId || expect.stringMatching(/\S/),
    ...documentedHeaders(status, code),
  },
  ...(withBody && status >= 400
    ? {
        body: { error: { code, message: expect.stringMatching(/\S/), request_id: res.requestId } },
        stackLike: false,
      }
    : {}),
});

/** Asserts the documented status, code, headers and error shape in one comparison. */
export const expectDocumented = (res: AnyResponse, status: number, code?: string, withBody = true): void => {
  expect(shapeOf(res, withBody)).toEqual(expectedShape(res, status, code, withBody));
};

/** A harness invoke result in the shape of {@link AnyResponse}. */
export const fromInvoke = (res: {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
  json: any;
  requestId: string;
}): AnyResponse => ({
  status: res.statusCode,
  headers: res.headers,
  body: res.body,
  json: res.json,
  requestId: res.requestId,
});
