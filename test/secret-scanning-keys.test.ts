/**
 * The public keys of secret scanning reports (shared/data/secret-scanning-keys.ts): read from a
 * `file:` or https URL, cached, read again for an unknown identifier at most once per refresh period,
 * bounded by a timeout and a size, no redirect followed. The http tests use a server on 127.0.0.1
 * with `allowHttp` (https needs a certificate the test can't have trusted); without it http: is
 * refused. The clock is injected; no assertion depends on how long anything takes.
 */
import { createServer, type Server } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { PublicKeySource, PublicKeysUnavailableError } from '../shared/data/secret-scanning-keys';
import { keysDocument, newSigningKey } from './support/secret-scanning';

const first = newSigningKey('key-1');
const second = newSigningKey('key-2');

const clock = () => {
  let now = 0;
  return { now: () => now, advance: (ms: number) => void (now += ms) };
};

describe('a file: keys document', () => {
  it('is read once and cached: a known identifier is served even after the file is gone', async () => {
    const document = keysDocument([first]);
    const source = new PublicKeySource({ url: document.url });
    expect(await source.get('key-1')).toBe(first.publicPem);
    rmSync(document.file);
    expect(await source.get('key-1')).toBe(first.publicPem);
  });

  it('is read again for an unknown identifier, at most once per refresh period', async () => {
    const document = keysDocument([first]);
    const time = clock();
    const source = new PublicKeySource({ url: document.url, minRefreshMs: 60_000, now: time.now });
    expect(await source.get('key-2')).toBeUndefined();
    document.publish([first, second]);
    time.advance(59_999);
    expect(await source.get('key-2')).toBeUndefined(); // too soon: not read again
    time.advance(1);
    expect(await source.get('key-2')).toBe(second.publicPem);
  });

  it('that turns bad once keys are cached: a logged warning, the cached keys kept, a new identifier unknown', async () => {
    const document = keysDocument([first]);
    const time = clock();
    const warnings: unknown[][] = [];
    const logger = { warn: (...args: unknown[]) => void warnings.push(args) };
    const source = new PublicKeySource({ url: document.url, minRefreshMs: 1, now: time.now, logger });
    expect(await source.get('key-1')).toBe(first.publicPem);
    writeFileSync(document.file, 'not json');
    time.advance(1);
    expect(await source.get('key-2')).toBeUndefined(); // the report is a 401 invalid_signature
    expect(await source.get('key-1')).toBe(first.publicPem);
    expect(warnings).toEqual([
      [
        'Public keys document could not be refreshed; the cached keys are kept',
        { error: expect.any(PublicKeysUnavailableError) },
      ],
    ]);
  });

  it('that is missing or not a keys document: PublicKeysUnavailableError (a 503), never a key', async () => {
    const document = keysDocument([first]);
    rmSync(document.file);
    await expect(new PublicKeySource({ url: document.url }).get('key-1')).rejects.toBeInstanceOf(
      PublicKeysUnavailableError,
    );
    const broken = keysDocument([]);
    writeFileSync(broken.file, '{"public_keys": "nope"}');
    await expect(new PublicKeySource({ url: broken.url }).get('key-1')).rejects.toBeInstanceOf(
      PublicKeysUnavailableError,
    );
  });
});

describe('a file: keys document that is not a regular file', () => {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));
  const fifo = () => {
    const dir = mkdtempSync(join(tmpdir(), 'secret-scanning-'));
    dirs.push(dir);
    const path = join(dir, 'keys.fifo');
    execFileSync('mkfifo', [path]);
    return path;
  };

  it.each([
    ['a FIFO no one writes to', fifo],
    ['a device', () => '/dev/zero'],
    ['a directory', () => tmpdir()],
  ])('%s is refused without being read: PublicKeysUnavailableError', async (_name, path) => {
    const source = new PublicKeySource({ url: pathToFileURL(path()).href, timeoutMs: 60_000 });
    await expect(source.get('key-1')).rejects.toThrow('Public keys document is not a regular file');
  });

  it('does not hold the reports after it: once the document is a file, the next read finds the key', async () => {
    const path = fifo();
    const time = clock();
    const source = new PublicKeySource({ url: pathToFileURL(path).href, minRefreshMs: 1, now: time.now });
    await expect(source.get('key-1')).rejects.toBeInstanceOf(PublicKeysUnavailableError);
    rmSync(path);
    writeFileSync(path, JSON.stringify({ public_keys: [{ key_identifier: 'key-1', key: first.publicPem }] }));
    time.advance(1);
    expect(await source.get('key-1')).toBe(first.publicPem);
  });
});

describe('a keys document over 256 KB', () => {
  it('is refused, not parsed: PublicKeysUnavailableError', async () => {
    const big = keysDocument([first]);
    const key = { key_identifier: 'key-1', key: first.publicPem, padding: 'x'.repeat(256 * 1024) };
    writeFileSync(big.file, JSON.stringify({ public_keys: [key] }));
    await expect(new PublicKeySource({ url: big.url }).get('key-1')).rejects.toBeInstanceOf(PublicKeysUnavailableError);
  });
});

describe('a keys document URL', () => {
  it.each(['http://127.0.0.1:1/keys', 'ftp://example.com/keys', 'not a url'])(
    '%s is refused when the source is made (https: and file: only)',
    (url) => {
      expect(() => new PublicKeySource({ url })).toThrow('The public keys document must be an https: or file: URL');
    },
  );

  it('https: and file: are accepted', () => {
    expect(() => new PublicKeySource({ url: 'https://api.github.com/meta/public_keys/secret_scanning' })).not.toThrow();
    expect(() => new PublicKeySource({ url: keysDocument([first]).url })).not.toThrow();
  });
});

const serve = async (handler: Parameters<typeof createServer>[1]) => {
  const server: Server = createServer(handler);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const stop = () => {
    server.closeAllConnections();
    server.close();
  };
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/keys`, server, stop };
};

describe('an http keys document', () => {
  /** A keys document server that counts the reads. */
  const keysServer = async () => {
    let requests = 0;
    const server = await serve((_request, response) => {
      requests += 1;
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ public_keys: [{ key_identifier: 'key-1', key: first.publicPem }] }));
    });
    return { ...server, requests: () => requests };
  };

  it('is fetched and cached: one request for many reports', async () => {
    const { url, stop, requests } = await keysServer();
    try {
      const source = new PublicKeySource({ url, allowHttp: true });
      for (let i = 0; i < 5; i += 1) expect(await source.get('key-1')).toBe(first.publicPem);
      expect(requests()).toBe(1);
    } finally {
      stop();
    }
  });

  it('is read once for reports that arrive together on a fresh source: each waits for the read under way', async () => {
    const { url, stop, requests } = await keysServer();
    try {
      const source = new PublicKeySource({ url, allowHttp: true });
      const keys = await Promise.all(Array.from({ length: 5 }, () => source.get('key-1')));
      expect(keys).toEqual(Array(5).fill(first.publicPem));
      expect(requests()).toBe(1);
    } finally {
      stop();
    }
  });

  it('that never answers is abandoned at the timeout: PublicKeysUnavailableError', async () => {
    const { url, stop } = await serve(() => undefined); // accepts, never responds
    try {
      await expect(new PublicKeySource({ url, allowHttp: true, timeoutMs: 200 }).get('key-1')).rejects.toBeInstanceOf(
        PublicKeysUnavailableError,
      );
    } finally {
      stop();
    }
  });
});

describe('a hostile http keys document', () => {
  it('a redirect is not followed: PublicKeysUnavailableError, and its target is never asked', async () => {
    let targetRequests = 0;
    const target = await serve((_request, response) => {
      targetRequests += 1;
      response.end(JSON.stringify({ public_keys: [{ key_identifier: 'key-1', key: first.publicPem }] }));
    });
    const redirecting = await serve((_request, response) => {
      response.writeHead(302, { location: target.url });
      response.end();
    });
    try {
      await expect(new PublicKeySource({ url: redirecting.url, allowHttp: true }).get('key-1')).rejects.toBeInstanceOf(
        PublicKeysUnavailableError,
      );
      expect(targetRequests).toBe(0);
    } finally {
      target.stop();
      redirecting.stop();
    }
  });

  it('a document past 256 KB is cut off as it streams in: the server never gets to send most of it', async () => {
    const total = 64 * 1024 * 1024;
    let sent = 0;
    const server = await serve(async (_request, response) => {
      const closed = once(response, 'close');
      let open = true;
      void closed.then(() => (open = false));
      response.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(64 * 1024, ' ');
      while (sent < total && open) {
        sent += chunk.length;
        if (!response.write(chunk)) await Promise.race([once(response, 'drain'), closed]);
      }
      response.end();
    });
    try {
      const source = new PublicKeySource({ url: server.url, allowHttp: true, timeoutMs: 20_000 });
      await expect(source.get('key-1')).rejects.toThrow('Public keys document over 262144 bytes');
      // What the sockets' buffers held past the limit, at most: never the whole document.
      expect(sent).toBeLessThan(total / 4);
    } finally {
      server.stop();
    }
  });
});
