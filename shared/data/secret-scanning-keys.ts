/**
 * The public keys that sign secret scanning reports, from a document shaped like GitHub's
 * `/meta/public_keys/secret_scanning` at an `https:` URL (`SECRET_SCANNING_KEYS_URL`; `file:` URLs
 * read a local file, as tests and the local stack do). Fetched with a timeout, no redirect
 * followed, its size counted as it streams in; cached for the container's life, and fetched again
 * when a report names an identifier the cache lacks — at most once per `minRefreshMs`, so unknown
 * identifiers can't turn every report into a fetch.
 */
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { keysDocumentUrl } from '../domain/github';
import { PublicKeysDocumentSchema } from '../domain/secret-scanning';
import { DataStoreUnavailableError } from './data-store-errors';

export { GITHUB_SECRET_SCANNING_KEYS_URL } from '../domain/github';

/** Largest keys document read, in bytes (GitHub's is a few KB). */
const MAX_DOCUMENT_BYTES = 256 * 1024;

export interface PublicKeySourceOptions {
  /** An `https:` or `file:` URL. */
  url: string;
  /** Also accept an `http:` URL: for tests against a local server only. @default false */
  allowHttp?: boolean;
  /** Longest one fetch may take. @default 3000 */
  timeoutMs?: number;
  /** Shortest time between two fetches. @default 60000 */
  minRefreshMs?: number;
  /** Clock, in epoch milliseconds. */
  now?: () => number;
  /** Told when a refresh fails while cached keys are kept (with nothing cached, `get` throws instead). */
  logger?: { warn(message: string, attributes: Record<string, unknown>): void };
}

/** No key to verify with: the report is answered 503, and GitHub sends it again later. */
export class PublicKeysUnavailableError extends DataStoreUnavailableError {
  override name = 'PublicKeysUnavailableError';
}

/** The text of a stream of bytes; past `MAX_DOCUMENT_BYTES` it stops reading (the stream is cancelled) and throws. */
const readBounded = async (chunks: AsyncIterable<Uint8Array>): Promise<string> => {
  const parts: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of chunks) {
    size += chunk.byteLength;
    if (size > MAX_DOCUMENT_BYTES)
      throw new PublicKeysUnavailableError(`Public keys document over ${MAX_DOCUMENT_BYTES} bytes`);
    parts.push(chunk);
  }
  return Buffer.concat(parts).toString('utf8');
};

/**
 * A local keys document: a regular file only. Opened without blocking, so a FIFO (whose open would
 * wait for a writer) or a device is refused at once instead of holding the fetch every report waits on.
 */
const readFile = async (path: string): Promise<string> => {
  const file = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    if (!(await file.stat()).isFile())
      throw new PublicKeysUnavailableError('Public keys document is not a regular file');
    // One byte past the limit is enough to know the file is too large.
    return await readBounded(file.createReadStream({ autoClose: false, end: MAX_DOCUMENT_BYTES }));
  } finally {
    await file.close();
  }
};

/** Rejects once the signal aborts, whatever `work` is waiting on (a read the kernel holds, say). */
const within = <T>(work: Promise<T>, signal: AbortSignal): Promise<T> =>
  Promise.race([
    work,
    new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true })),
  ]);

const readDocument = async (url: URL, timeoutMs: number): Promise<string> => {
  const signal = AbortSignal.timeout(timeoutMs);
  if (url.protocol === 'file:') return within(readFile(fileURLToPath(url)), signal);
  // A redirect could lead anywhere the function can reach (instance metadata, say): refused.
  const response = await fetch(url, { signal, redirect: 'error', headers: { accept: 'application/json' } });
  if (!response.ok) throw new PublicKeysUnavailableError(`Public keys document answered ${response.status}`);
  return response.body ? await readBounded(response.body) : '';
};

/** The keys of a document's text, by identifier. */
const parseDocument = (text: string): Map<string, string> => {
  let parsed;
  try {
    parsed = PublicKeysDocumentSchema.safeParse(JSON.parse(text));
  } catch {
    parsed = undefined;
  }
  if (!parsed?.success) throw new PublicKeysUnavailableError('Public keys document is not valid');
  return new Map(parsed.data.public_keys.map((entry) => [entry.key_identifier, entry.key]));
};

const defaults = { timeoutMs: 3000, minRefreshMs: 60_000, now: () => Date.now() };

export class PublicKeySource {
  private keys = new Map<string, string>();
  private lastFetch = Number.NEGATIVE_INFINITY;
  private inFlight: Promise<void> | undefined;
  private readonly url: URL;
  private readonly options: typeof defaults & PublicKeySourceOptions;

  /** @throws TypeError when the URL is not one the keys may be read from */
  constructor(options: PublicKeySourceOptions) {
    const url = keysDocumentUrl(options.url, options);
    if (!url) throw new TypeError(`The public keys document must be an https: or file: URL, got "${options.url}"`);
    this.url = url;
    this.options = { ...defaults, ...options };
  }

  /**
   * The PEM key of an identifier, or undefined when the document (fetched again if the identifier
   * is new and the last fetch is old enough) does not list it.
   * @throws PublicKeysUnavailableError when the document can't be read and nothing is cached
   */
  async get(identifier: string): Promise<string | undefined> {
    const cached = this.keys.get(identifier);
    if (cached !== undefined) return cached;
    // A fetch already under way is waited for, whoever started it: concurrent reports share it.
    if (this.inFlight || this.options.now() - this.lastFetch >= this.options.minRefreshMs) await this.refresh();
    else if (this.keys.size === 0) throw new PublicKeysUnavailableError('Public keys document not read yet');
    return this.keys.get(identifier);
  }

  private refresh(): Promise<void> {
    this.inFlight ??= this.load().finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  private async load(): Promise<void> {
    this.lastFetch = this.options.now();
    try {
      this.keys = parseDocument(await readDocument(this.url, this.options.timeoutMs));
    } catch (error) {
      const failure =
        error instanceof PublicKeysUnavailableError
          ? error
          : new PublicKeysUnavailableError('Public keys document could not be read', { cause: error });
      if (this.keys.size === 0) throw failure;
      this.options.logger?.warn('Public keys document could not be refreshed; the cached keys are kept', {
        error: failure,
      });
    }
  }
}
