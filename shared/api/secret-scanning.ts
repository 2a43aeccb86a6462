/**
 * The secret scanning report (docs/decisions.md "Leaked keys"): signature first, then the shape,
 * then each reported token: a live key that matches is revoked at once as the `leaked` key action
 * (its activity entry carries the report's url and source; the keys repository sends its
 * `Key Leaked` event). The raw token is never echoed, logged or stored: only its SHA-256.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { hashApiKey, isWellFormedApiKey } from '../domain/api-key';
import {
  KEY_IDENTIFIER_HEADER,
  MAX_REPORT_BYTES,
  parseReport,
  SECRET_SCANNING_ACTOR,
  SIGNATURE_HEADER,
  verifyReportSignature,
  type ReportAnswer,
  type ReportedToken,
} from '../domain/secret-scanning';
import type { ApiKeyRecord } from '../domain/key-record';
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
    ): Promise<{ record: ApiKeyRecord; revoked: boolean } | undefined>;
  };
  logger: Pick<Logger, 'info'>;
  now?: () => Date;
}

/** Tokens looked up at once. */
const CONCURRENCY = 10;

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

interface Outcome {
  answer: ReportAnswer;
  /** The key this token revoked now, if it did. */
  revoked?: ApiKeyRecord;
}

export const createSecretScanningHandler = (deps: SecretScanningDeps) => {
  const now = deps.now ?? (() => new Date());

  const judge = async (reported: ReportedToken): Promise<Outcome> => {
    const tokenHash = hashApiKey(reported.token);
    const answer = (label: ReportAnswer['label']): ReportAnswer => ({
      token_hash: tokenHash,
      token_type: reported.type,
      label,
    });
    const at = now();
    const where = { url: reported.url, source: reported.source };
    // A malformed token can't be a key: no database read.
    const found = isWellFormedApiKey(reported.token)
      ? await deps.keys.revokeLeaked(tokenHash, where, SECRET_SCANNING_ACTOR, at)
      : undefined;
    if (!found) return { answer: answer('false_positive') };
    // Revoked now or before: a key of this service either way.
    return { answer: answer('true_positive'), ...(found.revoked ? { revoked: found.record } : {}) };
  };

  return async (event: ApiEvent): Promise<ApiResponse> => {
    const body = await verifiedBody(event, deps.publicKeys);
    const report = parseReport(body);
    if (!report) throw invalidRequest('The report must be a JSON array of {token, type, url, source}.');
    const outcomes: Outcome[] = [];
    for (let at = 0; at < report.length; at += CONCURRENCY) {
      outcomes.push(...(await Promise.all(report.slice(at, at + CONCURRENCY).map(judge))));
    }
    const revoked = outcomes.flatMap(({ revoked: key }) => (key ? [key.key_id] : []));
    deps.logger.info('Secret scanning report', {
      tokens: outcomes.length,
      true_positives: outcomes.filter(({ answer }) => answer.label === 'true_positive').length,
      revoked_key_ids: revoked,
    });
    return jsonResponse(
      200,
      outcomes.map(({ answer }) => answer),
    );
  };
};
