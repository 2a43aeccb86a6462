/**
 * GitHub secret scanning reports (docs/decisions.md "Leaked keys"): the signature check and the
 * report's shape. Pure: the public keys come from shared/data/secret-scanning-keys.ts.
 * zod/mini keeps the function bundle small (shared/domain/usage-record-schema.ts does the same).
 */
import { createPublicKey, verify } from 'node:crypto';
import * as z from 'zod/mini';

/** Largest report body accepted, in bytes; a larger one is a 413 before anything is verified. */
export const MAX_REPORT_BYTES = 1024 * 1024;

/** The actor of what a report does, in activity entries and key events. */
export const SECRET_SCANNING_ACTOR = 'github-secret-scanning';

export const SIGNATURE_HEADER = 'github-public-key-signature';
export const KEY_IDENTIFIER_HEADER = 'github-public-key-identifier';

/** A document shaped like GitHub's `/meta/public_keys/secret_scanning`. */
export const PublicKeysDocumentSchema = z.object({
  public_keys: z.array(z.object({ key_identifier: z.string(), key: z.string(), is_current: z.optional(z.boolean()) })),
});

/** One reported match; `url` and `source` say where GitHub found it. Extra fields are ignored. */
const ReportedTokenSchema = z.object({
  token: z.string(),
  type: z.string(),
  url: z.string(),
  source: z.string(),
});
export type ReportedToken = z.infer<typeof ReportedTokenSchema>;
export const ReportSchema = z.array(ReportedTokenSchema);

/** Longest `url` and `source` kept from a report: past them the text is cut, so a key item can't outgrow DynamoDB's item limit. */
export const MAX_REPORTED_URL_CHARS = 2048;
export const MAX_REPORTED_SOURCE_CHARS = 64;

const cut = (text: string, max: number): string =>
  text.length <= max ? text : Array.from(text).slice(0, max).join('');

/** Where the report found a token, cut to the lengths kept (code points, so no character is split). */
export const reportedLocation = (reported: ReportedToken): Pick<ReportedToken, 'url' | 'source'> => ({
  url: cut(reported.url, MAX_REPORTED_URL_CHARS),
  source: cut(reported.source, MAX_REPORTED_SOURCE_CHARS),
});

/** The answer: one entry per reported token, never the token itself (the OpenAPI document's schema). */
export const ReportAnswerSchema = z.array(
  z.object({
    token_hash: z.string().check(z.regex(/^[0-9a-f]{64}$/)),
    token_type: z.string(),
    label: z.enum(['true_positive', 'false_positive']),
  }),
);
export type ReportAnswer = z.infer<typeof ReportAnswerSchema>[number];

/**
 * True when `signature` (base64 DER ECDSA, as GitHub sends it) verifies `body` under the PEM
 * public key with SHA-256. Any malformed input is simply false. A high-S signature is accepted
 * like its low-S twin: harmless here (docs/decisions.md "Leaked keys").
 */
export const verifyReportSignature = (body: Buffer, signature: string, publicKeyPem: string): boolean => {
  try {
    const bytes = Buffer.from(signature, 'base64');
    if (bytes.length === 0 || bytes.toString('base64') !== signature.replace(/\s/g, '')) return false;
    return verify('sha256', body, createPublicKey(publicKeyPem), bytes);
  } catch {
    return false;
  }
};

/** The report, or undefined when the body is not a JSON array of `{token, type, url, source}`. */
export const parseReport = (body: Buffer): ReportedToken[] | undefined => {
  let json: unknown;
  try {
    json = JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
  const parsed = ReportSchema.safeParse(json);
  return parsed.success ? parsed.data : undefined;
};
