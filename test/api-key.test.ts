import { createHash } from 'node:crypto';
import fc from 'fast-check';
import {
  API_KEY_LENGTH,
  API_KEY_PREFIX,
  apiKeyStart,
  generateApiKey,
  hashApiKey,
  isWellFormedApiKey,
  redactApiKeys,
} from '../shared/domain/api-key';
import { keyRunsIn, pastedKey } from './support/pasted-key';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const keys = Array.from({ length: 200 }, generateApiKey);

/** Every key that differs from `key` in exactly one character, within the base62 alphabet. */
const singleSubstitutions = (key: string): string[] => {
  const out: string[] = [];
  for (let i = API_KEY_PREFIX.length; i < key.length; i += 1) {
    for (const c of BASE62) if (c !== key[i]) out.push(key.slice(0, i) + c + key.slice(i + 1));
  }
  return out;
};

describe('generateApiKey', () => {
  it('is wsk_ + 43 random base62 characters + a 6-character checksum: 53 characters', () => {
    expect(API_KEY_LENGTH).toBe(53);
    for (const key of keys) {
      expect(key).toMatch(/^wsk_[0-9A-Za-z]{49}$/);
      expect(isWellFormedApiKey(key)).toBe(true);
    }
  });

  it('never repeats and draws on the whole base62 alphabet', () => {
    expect(new Set(keys).size).toBe(keys.length);
    const used = new Set(keys.flatMap((key) => [...key.slice(4, 47)]));
    expect(used.size).toBe(62);
  });

  it('carries at least 128 bits (here 256) of randomness in its random part', () => {
    // 43 base62 digits hold log2(62^43) ≈ 256.03 bits; the part is a 32-byte random number.
    expect(43 * Math.log2(62)).toBeGreaterThanOrEqual(256);
    const decode = (s: string) => [...s].reduce((n, c) => n * 62n + BigInt(BASE62.indexOf(c)), 0n);
    const values = keys.map((key) => decode(key.slice(4, 47)));
    for (const value of values) expect(value < 2n ** 256n).toBe(true);
    // Random 256-bit numbers: about half of them have their top bit set.
    const topBitSet = values.filter((value) => value >= 2n ** 255n).length;
    expect(topBitSet).toBeGreaterThan(60);
    expect(topBitSet).toBeLessThan(140);
  });
});

describe('isWellFormedApiKey', () => {
  const key = keys[0]!;

  it('rejects every single-character substitution of a real key (measured: 100% of 2,989 per key)', () => {
    for (const real of keys.slice(0, 20)) {
      const variants = singleSubstitutions(real);
      expect(variants).toHaveLength(49 * 61);
      expect(variants.filter(isWellFormedApiKey)).toEqual([]);
    }
  });

  it('rejects characters outside base62 anywhere after the prefix', () => {
    for (const bad of ['-', '_', '+', '/', '=', ' ', '.', 'é', '\n']) {
      for (const i of [4, 20, 46, 47, 52])
        expect(isWellFormedApiKey(key.slice(0, i) + bad + key.slice(i + 1))).toBe(false);
    }
  });

  it('rejects every truncation and any extension', () => {
    for (let length = 0; length < key.length; length += 1) expect(isWellFormedApiKey(key.slice(0, length))).toBe(false);
    expect(isWellFormedApiKey(`${key}0`)).toBe(false);
    expect(isWellFormedApiKey(` ${key}`)).toBe(false);
    expect(isWellFormedApiKey(`${key} `)).toBe(false);
  });

  it('rejects a wrong or differently cased prefix even with a valid body', () => {
    const body = key.slice(4);
    for (const prefix of ['WSK_', 'wsk-', 'sk__', 'wsx_', 'wsk', 'wsk__']) {
      expect(isWellFormedApiKey(prefix + body)).toBe(false);
    }
  });

  it('rejects every adjacent transposition that changes the key (measured over 200 keys)', () => {
    let changed = 0;
    let accepted = 0;
    for (const real of keys) {
      for (let i = 4; i < real.length - 1; i += 1) {
        if (real[i] === real[i + 1]) continue;
        changed += 1;
        if (isWellFormedApiKey(real.slice(0, i) + real[i + 1] + real[i] + real.slice(i + 2))) accepted += 1;
      }
    }
    expect(changed).toBeGreaterThan(9000);
    expect(accepted).toBe(0);
  });
});

describe('hashApiKey and apiKeyStart', () => {
  it('is the hex SHA-256 of the whole key value', () => {
    // Known answer (FIPS 180-2): SHA-256("abc").
    expect(hashApiKey('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    const key = keys[1]!;
    expect(hashApiKey(key)).toMatch(/^[0-9a-f]{64}$/);
    expect(hashApiKey(key)).toBe(createHash('sha256').update(key, 'utf8').digest('hex'));
    expect(new Set(keys.map(hashApiKey)).size).toBe(keys.length);
  });

  it('keeps only the prefix and 4 random characters for display', () => {
    const key = keys[2]!;
    expect(apiKeyStart(key)).toBe(key.slice(0, 8));
    expect(apiKeyStart(key)).toMatch(/^wsk_[0-9A-Za-z]{4}$/);
  });
});

describe('redactApiKeys', () => {
  it('leaves no run of a pasted key, however much of it is percent-encoded and whatever junk is around it', () => {
    fc.assert(
      fc.property(pastedKey, fc.constantFrom('/api/v1/payment-providers/', '/api/v1/', '/'), ({ key, segment }, at) => {
        const redacted = redactApiKeys(`${at}${segment}/x`);
        expect(keyRunsIn(redacted, key)).toEqual([]);
        expect(redacted).toContain('wsk_[REDACTED]');
      }),
      { numRuns: 2000 },
    );
  });

  it('finds the key of the review: one character encoded, next to an escape that does not decode', () => {
    const key = keys[3]!;
    const path = `/api/v1/branch/${key.slice(0, 10)}%${key.charCodeAt(10).toString(16)}${key.slice(11)}%E0%A4%A`;
    expect(() => decodeURIComponent(path)).toThrow(URIError);
    expect(redactApiKeys(path)).toBe('/api/v1/branch/wsk_[REDACTED]%E0%A4%A');
  });

  it.each([
    ['/v1/members', '/v1/members'],
    ['/v1/caf%C3%A9/%E0%A4%A/%zz/%/%25', '/v1/caf%C3%A9/%E0%A4%A/%zz/%/%25'],
    ['/a/%77sk_0123456789abcdefghij/b', '/a/wsk_[REDACTED]/b'],
    ['/a/%2577sk_0123456789abcdefghij/b', '/a/wsk_[REDACTED]/b'],
    ['/a/WSK_0123456789abcdefghij/b', '/a/WSK_0123456789abcdefghij/b'],
    ['/a/wsk_0123456789abcdefghi/b', '/a/wsk_0123456789abcdefghi/b'],
    ['/a/wsk_0123456789%61bcdefghij%2Fb', '/a/wsk_[REDACTED]%2Fb'],
    ['/%F0%9F%98%80😀/%77sk_0123456789abcdefghij/%F0%9F%98%80', '/%F0%9F%98%80😀/wsk_[REDACTED]/%F0%9F%98%80'],
  ])('redacts %j to %j, keeping the rest as it was', (input, output) => {
    expect(redactApiKeys(input)).toBe(output);
  });
});
