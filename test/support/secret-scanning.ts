/**
 * A GitHub stand-in for secret scanning tests: key pairs the test generates, a public keys
 * document (shaped like GitHub's) in a temporary file served by a `file:` URL, and signed reports.
 */
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { routeKey, secretScanningRoute } from '../../shared/api/routes';
import type { EventInput } from '../../lib/local/events';

export interface SigningKey {
  identifier: string;
  privateKey: KeyObject;
  publicPem: string;
}

export const newSigningKey = (identifier: string): SigningKey => {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { identifier, privateKey, publicPem: publicKey.export({ type: 'spki', format: 'pem' }).toString() };
};

/** A keys document in a temporary directory; `publish` rewrites it with the given keys. */
export const keysDocument = (keys: readonly SigningKey[]) => {
  const file = join(mkdtempSync(join(tmpdir(), 'secret-scanning-')), 'public_keys.json');
  const publish = (published: readonly SigningKey[]) =>
    writeFileSync(
      file,
      JSON.stringify({
        public_keys: published.map((key) => ({ key_identifier: key.identifier, key: key.publicPem, is_current: true })),
      }),
    );
  publish(keys);
  return { file, url: pathToFileURL(file).href, publish };
};

/** The base64 DER ECDSA signature GitHub sends, over the raw body. */
export const signBody = (body: string | Buffer, key: SigningKey): string =>
  sign('sha256', Buffer.from(body), key.privateKey).toString('base64');

/** The order of P-256's base point: an ECDSA signature (r, s) also verifies as (r, n - s). */
const P256_ORDER = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n;

const derInteger = (value: bigint): Buffer => {
  let hex = value.toString(16);
  if (hex.length % 2 === 1) hex = `0${hex}`;
  const bytes = Buffer.from(hex, 'hex');
  const body = bytes[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), bytes]) : bytes;
  return Buffer.concat([Buffer.from([0x02, body.length]), body]);
};

/**
 * The other valid signature of the same body, (r, n - s), and which of the two is high-S
 * (s > n / 2): a base64 DER ECDSA P-256 signature in, both forms out.
 */
export const signatureTwins = (signature: string): { lowS: string; highS: string } => {
  const der = Buffer.from(signature, 'base64');
  const rLength = der[3]!;
  const r = BigInt(`0x${der.subarray(4, 4 + rLength).toString('hex')}`);
  const s = BigInt(`0x${der.subarray(6 + rLength).toString('hex')}`);
  const twinBody = Buffer.concat([derInteger(r), derInteger(P256_ORDER - s)]);
  const twin = Buffer.concat([Buffer.from([0x30, twinBody.length]), twinBody]).toString('base64');
  return s > P256_ORDER / 2n ? { lowS: twin, highS: signature } : { lowS: signature, highS: twin };
};

export interface ReportOptions {
  key?: SigningKey;
  /** Overrides the signature (default: the key's signature of the body). */
  signature?: string;
  /** Overrides the identifier header (default: the key's). */
  identifier?: string;
  /** Leaves out a header. */
  omit?: 'identifier' | 'signature';
}

/** The event input of a report: POST to the route with the signature headers. */
export const reportInput = (body: string | Buffer, options: ReportOptions = {}): EventInput => {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  const identifier = options.identifier ?? options.key?.identifier;
  const signature = options.signature ?? (options.key ? signBody(body, options.key) : undefined);
  if (identifier !== undefined && options.omit !== 'identifier') headers['github-public-key-identifier'] = identifier;
  if (signature !== undefined && options.omit !== 'signature') headers['github-public-key-signature'] = signature;
  return { method: 'POST', path: secretScanningRoute.path, routeKey: routeKey(secretScanningRoute), headers, body };
};

/** A report entry as GitHub sends it. */
export const reported = (token: string, url = 'https://github.com/octo/repo/blob/abc/config.js') => ({
  token,
  type: 'branch_api_key',
  url,
  source: 'content',
});

/** The events of a KEY_EVENTS_FILE, one per line (none when the file does not exist yet). */
export const readEventsFile = (file: string): Record<string, any>[] =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line))
    : [];
