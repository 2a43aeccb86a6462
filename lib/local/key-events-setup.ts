/**
 * The local stack's key events file and secret scanning key pair (docs/decisions.md "Key events",
 * "Leaked keys"): events go to `events.jsonl` under the data directory (or a temporary one) unless
 * KEY_EVENTS_FILE names another; reports are verified with a key pair of the local stack's own,
 * published as a keys document shaped like GitHub's behind a `file:` URL, unless
 * SECRET_SCANNING_KEYS_URL names another. With --data-dir the pair is kept across restarts.
 */
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** The identifier the local key pair is published under. */
export const LOCAL_SIGNING_KEY_ID = 'branch-api-local';

export interface LocalKeyEventsSetup {
  keyEventsFile: string;
  secretScanningKeysUrl: string;
  /** The private key that signs local test reports, when the local stack made the pair. */
  signingKeyFile?: string;
}

const ensureKeyPair = (dir: string): { documentFile: string; privateKeyFile: string } => {
  const documentFile = join(dir, 'secret-scanning-keys.json');
  const privateKeyFile = join(dir, 'secret-scanning-private-key.pem');
  if (existsSync(documentFile) && existsSync(privateKeyFile)) return { documentFile, privateKeyFile };
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  writeFileSync(privateKeyFile, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  const key = publicKey.export({ type: 'spki', format: 'pem' }).toString();
  writeFileSync(
    documentFile,
    JSON.stringify({ public_keys: [{ key_identifier: LOCAL_SIGNING_KEY_ID, key, is_current: true }] }, null, 2),
  );
  return { documentFile, privateKeyFile };
};

/** Sets KEY_EVENTS_FILE and SECRET_SCANNING_KEYS_URL for the handlers, unless already set. */
export const setUpLocalKeyEvents = (
  dataDir: string | undefined,
  env: Record<string, string | undefined> = process.env,
): LocalKeyEventsSetup => {
  const dir = dataDir ?? mkdtempSync(join(tmpdir(), 'branch-api-'));
  env.KEY_EVENTS_FILE ||= join(dir, 'events.jsonl');
  let signingKeyFile: string | undefined;
  if (!env.SECRET_SCANNING_KEYS_URL) {
    const pair = ensureKeyPair(dir);
    env.SECRET_SCANNING_KEYS_URL = pathToFileURL(pair.documentFile).href;
    signingKeyFile = pair.privateKeyFile;
  }
  return {
    keyEventsFile: env.KEY_EVENTS_FILE,
    secretScanningKeysUrl: env.SECRET_SCANNING_KEYS_URL,
    ...(signingKeyFile ? { signingKeyFile } : {}),
  };
};
