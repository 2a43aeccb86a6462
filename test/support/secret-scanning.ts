/**
 * A GitHub stand-in for secret scanning tests: key pairs the test generates, a public keys
 * document (shaped like GitHub's) in a temporary file served by a `file:` URL, and signed reports.
 */
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { secretScanningRoute } from '../../shared/api/routes';
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
  return { method: 'POST', path: secretScanningRoute.path, headers, body };
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
