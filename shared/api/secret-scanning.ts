/**
 * The secret scanning report (docs/decisions.md "Leaked keys"): signature first, then the shape,
 * then each reported token on its own: a live key that matches is revoked at once as the `leaked`
 * key action (its activity entry carries the report's url and source, cut to a bounded length; the
 * keys repository sends its `Key Leaked` event), whatever earlier events of the key still wait. A
 * token whose revocation fails is logged and the others are still revoked; the report then answers
 * 5xx (503 when the database is unavailable) so GitHub sends it again: a 200 would end GitHub's
 * deliveries with a live key. Which tokens are keys is one batch read per 100, and no revocation
 * starts too late to answer in time: what is left answers 503 and the resend goes on from there.
 * The raw token is never echoed, logged or stored: only its SHA-256.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { Context } from 'aws-lambda';
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
import type { KeyReader } from '../data/repositories/key-reader';
import type { KeysRepository } from '../data/repositories/keys';
import { invalidRequest, invalidSignature, payloadTooLarge, serviceUnavailable } from './errors';
import { jsonResponse, type ApiEvent, type ApiResponse } from './http/response';

export interface SecretScanningDeps {
  publicKeys: { get(identifier: string): Promise<string | undefined> };
  /** Revokes a leaked key as the `leaked` action: its activity entry and its `Key Leaked` event. */
  keys: Pick<KeysRepository, 'revokeLeaked'>;
  /** Which hashes are keys, up to 100 in one read. */
  keyReader: Pick<KeyReader, 'getStoredBatch'>;
  logger: Pick<Logger, 'info' | 'error'>;
  now?: () => Date;
  /** Time kept back for the work under way once no more starts. @default REPORT_RESERVE_MS */
  reserveMs?: number;
}

/**
 * Tokens handled at once: a well-formed token waits on one to four DynamoDB calls, so a report of
 * thousands must overlap them to finish inside the function's timeout (docs/decisions.md "Leaked keys").
 */
export const REPORT_CONCURRENCY = 32;

/** Hashes per batch read (DynamoDB's BatchGetItem limit). */
const LOOKUP_BATCH = 100;

/**
 * Time a revocation may need once started: its key read, write, activity copy and clearing write
 * (2 s each at the default DynamoDB deadline) and its key event (three sends of up to 3 s). Nothing
 * starts with less left, so a slow report answers 503 before the function's timeout, never a 500.
 */
export const REPORT_RESERVE_MS = 17_000;

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
  /** Not judged in this delivery: no time was left to start it. */
  deferred?: true;
  /** The key this token revoked now, if it did. */
  revoked?: ApiKeyRecord;
  /** Why this token could not be revoked, if it could not. */
  failure?: unknown;
}

/** A well-formed token's key as the batch read found it; `deferred` when it was not read in time. */
type Lookup = { revoked: boolean } | 'deferred';

/**
 * The keys among a report's well-formed tokens, by hash: one batch read per 100 distinct hashes,
 * each started only while `inTime()`; a hash with no key is absent, so it costs no read of its own.
 */
const lookUpKeys = async (
  report: readonly ReportedToken[],
  keyReader: SecretScanningDeps['keyReader'],
  inTime: () => boolean,
): Promise<Map<string, Lookup>> => {
  const hashes = [
    ...new Set(report.filter(({ token }) => isWellFormedApiKey(token)).map(({ token }) => hashApiKey(token))),
  ];
  const batches = Array.from({ length: Math.ceil(hashes.length / LOOKUP_BATCH) }, (_, i) =>
    hashes.slice(i * LOOKUP_BATCH, (i + 1) * LOOKUP_BATCH),
  );
  const keys = new Map<string, Lookup>();
  await pMap(
    batches,
    async (batch) => {
      if (!inTime()) return batch.forEach((hash) => keys.set(hash, 'deferred'));
      const { found, unprocessed } = await keyReader.getStoredBatch(batch);
      for (const [hash, item] of found) keys.set(hash, { revoked: item.revoked_at !== undefined });
      // Throttled: the resend reads them.
      for (const hash of unprocessed) keys.set(hash, 'deferred');
    },
    { concurrency: REPORT_CONCURRENCY },
  );
  return keys;
};

/** True while there is time to start more work: more than the reserve left of the function's time. */
const inTimeOf = (context: Pick<Context, 'getRemainingTimeInMillis'>, reserveMs: number) => () =>
  context.getRemainingTimeInMillis() > reserveMs;

export const createSecretScanningHandler = (deps: SecretScanningDeps) => {
  const now = deps.now ?? (() => new Date());

  const judge = async (reported: ReportedToken, tokenHash: string, index: number): Promise<Verdict> => {
    // A malformed token can't be a key: no database read.
    if (!isWellFormedApiKey(reported.token)) return { label: 'false_positive' };
    try {
      const found = await deps.keys.revokeLeaked(tokenHash, reportedLocation(reported), SECRET_SCANNING_ACTOR, now());
      if (!found) return { label: 'false_positive' };
      // Revoked, with its activity entry left on the key for the stream's finisher to copy.
      for (const { copied, copyError } of found.pending) {
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

  /** A token as the batch read left it: no key, revoked already, not read in time, or a live key to judge. */
  const triage =
    (keys: Map<string, Lookup>, inTime: () => boolean) =>
    async (reported: ReportedToken, tokenHash: string, index: number): Promise<Verdict> => {
      const key = keys.get(tokenHash);
      if (key === undefined) return { label: 'false_positive' };
      if (key !== 'deferred' && key.revoked) return { label: 'true_positive' };
      if (key === 'deferred' || !inTime()) return { label: 'true_positive', deferred: true };
      return judge(reported, tokenHash, index);
    };

  return async (event: ApiEvent, context: Pick<Context, 'getRemainingTimeInMillis'>): Promise<ApiResponse> => {
    const body = await verifiedBody(event, deps.publicKeys);
    const report = parseReport(body);
    if (!report) throw invalidRequest('The report must be a JSON array of {token, type, url, source}.');
    const inTime = inTimeOf(context, deps.reserveMs ?? REPORT_RESERVE_MS);
    const verdictOf = triage(await lookUpKeys(report, deps.keyReader, inTime), inTime);
    // A token reported twice (found in two places) is judged once, where it is first named.
    const verdicts = new Map<string, Promise<Verdict>>();
    const answers = await pMap(
      report,
      async (reported, index): Promise<ReportAnswer> => {
        const tokenHash = hashApiKey(reported.token);
        let verdict = verdicts.get(tokenHash);
        if (!verdict) verdicts.set(tokenHash, (verdict = verdictOf(reported, tokenHash, index)));
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
      deferred: judged.filter(({ deferred }) => deferred).length,
    });
    // Every other token is settled, so the report sent again costs little; a 200 would be final.
    const failure = failures.find((failed) => failed instanceof DataStoreUnavailableError) ?? failures[0];
    if (failure !== undefined) throw failure;
    // Out of time: what was revoked stays revoked, and the resend reads it as such.
    if (judged.some(({ deferred }) => deferred)) throw serviceUnavailable(1);
    return jsonResponse(200, answers);
  };
};
