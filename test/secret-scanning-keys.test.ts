/**
 * The public keys of secret scanning reports (shared/data/secret-scanning-keys.ts): read from a
 * `file:` or http URL, cached, read again for an unknown identifier at most once per refresh period,
 * bounded by a timeout. The clock is injected; no assertion depends on how long anything takes.
 */
import { createServer, type Server } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { rmSync, writeFileSync } from 'node:fs';
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

describe('a keys document over 256 KB', () => {
  it('is refused, not parsed: PublicKeysUnavailableError', async () => {
    const big = keysDocument([first]);
    const key = { key_identifier: 'key-1', key: first.publicPem, padding: 'x'.repeat(256 * 1024) };
    writeFileSync(big.file, JSON.stringify({ public_keys: [key] }));
    await expect(new PublicKeySource({ url: big.url }).get('key-1')).rejects.toBeInstanceOf(PublicKeysUnavailableError);
  });
});

describe('an http keys document', () => {
  const serve = async (handler: Parameters<typeof createServer>[1]) => {
    const server: Server = createServer(handler);
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/keys`, server };
  };

  it('is fetched and cached: one request for many reports', async () => {
    let requests = 0;
    const { url, server } = await serve((_request, response) => {
      requests += 1;
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ public_keys: [{ key_identifier: 'key-1', key: first.publicPem }] }));
    });
    try {
      const source = new PublicKeySource({ url });
      for (let i = 0; i < 5; i += 1) expect(await source.get('key-1')).toBe(first.publicPem);
      expect(requests).toBe(1);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it('that never answers is abandoned at the timeout: PublicKeysUnavailableError', async () => {
    const { url, server } = await serve(() => undefined); // accepts, never responds
    try {
      await expect(new PublicKeySource({ url, timeoutMs: 200 }).get('key-1')).rejects.toBeInstanceOf(
        PublicKeysUnavailableError,
      );
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});
