/**
 * The secret scanning report (docs/decisions.md "Leaked keys"): signature first, then the shape,
 * then each reported token on its own: a live key that matches is revoked at once as the `leaked`
 * key action (its activity entry carries the report's url and source, cut to a bounded length; the
 * keys repository sends its `Key Leaked` event), whatever earlier events of the key still wait. A
 * token whose revocation fails is logged and the others are still revoked; the report then answers
 * 5xx (503 when the database is unavailable) so GitHub sends it again: a 200 would end GitHub's
 * deliveries with a live key. The raw token is never echoed, logged or stored: only its SHA-256.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import pMap from 'p-map';
import { DataStoreUnavailableError } from '../data/data-store-errors';
import { hashApiKey, isWellFormedApiKey } from '../domain/api-key';
import {
  KEY_IDENTIFIER_HEADER,
  MAX_REPORT_BYTES,
  parseReport,
  reportedLocation,
  SECRET_SCANNING_ACTOR,
  SIGNATURE_HEADER,
  verifyReportSignature,
  type ReportAnswer,
  type ReportedToken,
} from '../domain/secret-scanning';
import type { ApiKeyRecord } from '../domain/key-record';
import type { PendingEntry } from '../data/repositories/keys';
import { invalidRequest, invalidSignature, payloadTooLarge } from './errors';
import { jsonResponse, type ApiEvent, type ApiResponse } from './http/response';

export interface SecretScanningDeps {
  publicKeys: { get(identifier: string): Promise<string | undefined> };
  /**
   * Revokes a leaked key as the `leaked` action: its activity entry and its `Key Leaked` event
   * (shared/data/repositories/keys.ts).
   */
  keys: {
    revokeLeaked(
      keyHash: string,
      report: Pick<ReportedToken, 'url' | 'source'>,
      actor: string,
      now?: Date,
    ): Promise<
      | { record: ApiKeyRecord; revoked: boolean; pending?: readonly Pick<PendingEntry, 'copied' | 'copyError'>[] }
      | undefined
    >;
  };
  logger: Pick<Logger, 'info' | 'error'>;
  now?: () => Date;
}

/**
 * Tokens handled at once: a well-formed token waits on one to four DynamoDB calls, so a report of
 * thousands must overlap them to finish inside the function's timeout (docs/decisions.md "Leaked keys").
 */
export const REPORT_CONCURRENCY = 32;

/** The raw body as sent, without reading what it says. */
const rawBody = (event: ApiEvent): Buffer => Buffer.from(event.body ?? '', event.isBase64Encoded ? 'base64' : 'utf8');

/** The body, once its signature verifies; a 413 or 401 otherwise. Nothing in it is parsed here. */
const verifiedBody = async (event: ApiEvent, publicKeys: SecretScanningDeps['publicKeys']): Promise<Buffer> => {
  const body = rawBody(event);
  if (body.length > MAX_REPORT_BYTES) throw payloadTooLarge();
  const identifier = event.headers?.[KEY_IDENTIFIER_HEADER];
  const signature = event.headers?.[SIGNATURE_HEADER];
  if (!identifier || !signature) throw invalidSignature();
  const publicKey = await publicKeys.get(identifier);
  if (publicKey === undefined || !verifyReportSignature(body, signature, publicKey)) throw invalidSignature();
  return body;
};

/** What one distinct token came to. */
interface Verdict {
  label: ReportAnswer['label'];
  /** The key this token revoked now, if it did. */
  revoked?: ApiKeyRecord;
  /** Why this token could not be revoked, if it could not. */
  failure?: unknown;
}

export const createSecretScanningHandler = (deps: SecretScanningDeps) => {
  const now = deps.now ?? (() => new Date());

  const judge = async (reported: ReportedToken, tokenHash: string, index: number): Promise<Verdict> => {
    // A malformed token can't be a key: no database read.
    if (!isWellFormedApiKey(reported.token)) return { label: 'false_positive' };
    try {
      const found = await deps.keys.revokeLeaked(tokenHash, reportedLocation(reported), SECRET_SCANNING_ACTOR, now());
      if (!found) return { label: 'false_positive' };
      // Revoked, with its activity entry left on the key for the stream's finisher to copy.
      for (const { copied, copyError } of found.pending ?? []) {
        if (!copied)
          deps.logger.error('Leaked key revoked, its activity entry not copied yet', { index, error: copyError });
      }
      // Revoked now or before: a key of this service either way.
      return { label: 'true_positive', ...(found.revoked ? { revoked: found.record } : {}) };
    } catch (failure) {
      // It has this service's format and checksum; whether it is a live key is unknown.
      deps.logger.error('Reported token not revoked', { index, token_hash: tokenHash, error: failure });
      return { label: 'true_positive', failure };
    }
  };

  return async (event: ApiEvent): Promise<ApiResponse> => {
    const body = await verifiedBody(event, deps.publicKeys);
    const report = parseReport(body);
    if (!report) throw invalidRequest('The report must be a JSON array of {token, type, url, source}.');
    // A token reported twice (found in two places) is judged once, where it is first named.
    const verdicts = new Map<string, Promise<Verdict>>();
    const answers = await pMap(
      report,
      async (reported, index): Promise<ReportAnswer> => {
        const tokenHash = hashApiKey(reported.token);
        let verdict = verdicts.get(tokenHash);
        if (!verdict) verdicts.set(tokenHash, (verdict = judge(reported, tokenHash, index)));
        const { label } = await verdict;
        return { token_hash: tokenHash, token_type: reported.type, label };
      },
      { concurrency: REPORT_CONCURRENCY },
    );
    const judged = await Promise.all(verdicts.values());
    const failures = judged.flatMap(({ failure }) => (failure === undefined ? [] : [failure]));
    deps.logger.info('Secret scanning report', {
      tokens: answers.length,
      true_positives: answers.filter(({ label }) => label === 'true_positive').length,
      revoked_key_ids: judged.flatMap(({ revoked }) => (revoked ? [revoked.key_id] : [])),
      not_revoked: failures.length,
    });
    // Every other token is settled, so the report sent again costs little; a 200 would be final.
    const failure = failures.find((failed) => failed instanceof DataStoreUnavailableError) ?? failures[0];
    if (failure !== undefined) throw failure;
    return jsonResponse(200, answers);
  };
};
