/**
 * The public keys that sign secret scanning reports, from a document shaped like GitHub's
 * `/meta/public_keys/secret_scanning` at a URL (`SECRET_SCANNING_KEYS_URL`; `file:` URLs read a
 * local file, as tests and the local stack do). Fetched with a timeout, cached for the
 * container's life, and fetched again when a report names an identifier the cache lacks — at
 * most once per `minRefreshMs`, so unknown identifiers can't turn every report into a fetch.
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { PublicKeysDocumentSchema } from '../domain/secret-scanning';
import { DataStoreUnavailableError } from './data-store-errors';

export { GITHUB_SECRET_SCANNING_KEYS_URL } from '../domain/github';

/** Largest keys document read, in bytes (GitHub's is a few KB). */
const MAX_DOCUMENT_BYTES = 256 * 1024;

export interface PublicKeySourceOptions {
  url: string;
  /** Longest one fetch may take. @default 3000 */
  timeoutMs?: number;
  /** Shortest time between two fetches. @default 60000 */
  minRefreshMs?: number;
  /** Clock, in epoch milliseconds. */
  now?: () => number;
}

/** No key to verify with: the report is answered 503, and GitHub sends it again later. */
export class PublicKeysUnavailableError extends DataStoreUnavailableError {
  override name = 'PublicKeysUnavailableError';
}

const readDocument = async (url: URL, timeoutMs: number): Promise<string> => {
  if (url.protocol === 'file:') {
    return await readFile(fileURLToPath(url), { encoding: 'utf8', signal: AbortSignal.timeout(timeoutMs) });
  }
  const response = await fetch(url, {
    signal: AbortSignal.timeout(timeoutMs),
    headers: { accept: 'application/json' },
  });
  if (!response.ok) throw new PublicKeysUnavailableError(`Public keys document answered ${response.status}`);
  return await response.text();
};

export class PublicKeySource {
  private keys = new Map<string, string>();
  private lastFetch = Number.NEGATIVE_INFINITY;
  private inFlight: Promise<void> | undefined;
  private readonly url: URL;
  private readonly timeoutMs: number;
  private readonly minRefreshMs: number;
  private readonly now: () => number;

  constructor(options: PublicKeySourceOptions) {
    this.url = new URL(options.url);
    this.timeoutMs = options.timeoutMs ?? 3000;
    this.minRefreshMs = options.minRefreshMs ?? 60_000;
    this.now = options.now ?? (() => Date.now());
  }

  /**
   * The PEM key of an identifier, or undefined when the document (fetched again if the identifier
   * is new and the last fetch is old enough) does not list it.
   * @throws PublicKeysUnavailableError when the document can't be read and nothing is cached
   */
  async get(identifier: string): Promise<string | undefined> {
    const cached = this.keys.get(identifier);
    if (cached !== undefined) return cached;
    if (this.now() - this.lastFetch >= this.minRefreshMs) await this.refresh();
    else if (this.keys.size === 0) throw new PublicKeysUnavailableError('Public keys document not read yet');
    return this.keys.get(identifier);
  }

  private refresh(): Promise<void> {
    // Concurrent reports wait for one fetch.
    this.inFlight ??= this.load().finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  private async load(): Promise<void> {
    this.lastFetch = this.now();
    let text: string;
    try {
      text = await readDocument(this.url, this.timeoutMs);
    } catch (error) {
      if (this.keys.size > 0) return; // keep serving what is cached
      throw new PublicKeysUnavailableError('Public keys document could not be read', { cause: error });
    }
    let parsed;
    try {
      parsed = text.length > MAX_DOCUMENT_BYTES ? undefined : PublicKeysDocumentSchema.safeParse(JSON.parse(text));
    } catch {
      parsed = undefined;
    }
    if (!parsed?.success) {
      if (this.keys.size > 0) return;
      throw new PublicKeysUnavailableError('Public keys document is not valid');
    }
    this.keys = new Map(parsed.data.public_keys.map((entry) => [entry.key_identifier, entry.key]));
  }
}
