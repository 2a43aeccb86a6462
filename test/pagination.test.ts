import { handler as listMembers } from '../functions/list-members';
import { handler as listProviders } from '../functions/list-payment-providers';
import { buildEvent } from '../lib/local/events';
import { ApiError } from '../shared/api/errors';
import { decodeCursor, encodeCursor, LIMIT_PATTERN, MAX_LIMIT, readPageRequest } from '../shared/api/http/pagination';
import { mainBranch } from './support/fixtures';
import { invoke, setUpBranches } from './support/harness';

const memberIds = mainBranch.members.map((member) => member.id);
const activeProviderIds = ['pp_adyen', 'pp_mollie', 'pp_stripe'];

const codeOf = (f: () => unknown): string | undefined => {
  try {
    f();
  } catch (error) {
    return error instanceof ApiError ? `${error.statusCode} ${error.code}` : String(error);
  }
  return undefined;
};

describe('cursor encoding', () => {
  it('round-trips an id for the same list and branch', () => {
    for (const id of ['mem_01', 'a', 'x'.repeat(64), 'A-b_9']) {
      expect(decodeCursor('members', 'br_main', encodeCursor('members', 'br_main', id))).toBe(id);
    }
  });

  it('is opaque: the id is not readable as is', () => {
    expect(encodeCursor('members', 'br_main', 'mem_01')).not.toContain('mem_01');
  });

  it('refuses a cursor of another branch or another list', () => {
    const cursor = encodeCursor('members', 'br_main', 'mem_01');
    expect(codeOf(() => decodeCursor('members', 'br_other', cursor))).toBe('400 invalid_request');
    expect(codeOf(() => decodeCursor('payment_providers', 'br_main', cursor))).toBe('400 invalid_request');
  });

  it('refuses every altered or garbage cursor with a 400', () => {
    const cursor = encodeCursor('members', 'br_main', 'mem_05');
    const [encoded, digest] = cursor.split('.') as [string, string];
    const forged = `${Buffer.from('mem_20').toString('base64url')}.${digest}`;
    const flipped = cursor.slice(0, -1) + (cursor.endsWith('A') ? 'B' : 'A');
    for (const bad of [
      '',
      '.',
      'garbage',
      encoded,
      `${encoded}.`,
      `.${digest}`,
      `${cursor}.x`,
      forged,
      flipped,
      `${encoded}.${digest.slice(1)}`,
      `${encoded}.${digest}A`,
      `${Buffer.from('../../x').toString('base64url')}.${digest}`,
      '%%%.###',
    ]) {
      expect([bad, codeOf(() => decodeCursor('members', 'br_main', bad))]).toEqual([bad, '400 invalid_request']);
    }
  });

  it('accepts only the canonical encoding of the id (no padding, stray characters or spare bits)', () => {
    const cursor = encodeCursor('members', 'br_main', 'mem_5'); // 5 bytes: 7 characters, 2 spare bits
    const [encoded, digest] = cursor.split('.') as [string, string];
    expect(encoded).toHaveLength(7);
    const spare = encoded.slice(0, -1) + String.fromCharCode(encoded.charCodeAt(6) + 1);
    expect(Buffer.from(spare, 'base64url').toString()).toBe('mem_5'); // the same bytes to Node's decoder
    for (const variant of [`${encoded}=`, `${encoded}!`, `${encoded.slice(0, 3)}*${encoded.slice(3)}`, spare]) {
      expect([variant, codeOf(() => decodeCursor('members', 'br_main', `${variant}.${digest}`))]).toEqual([
        variant,
        '400 invalid_request',
      ]);
    }
  });

  it('refuses a correctly signed cursor whose id no item could have', () => {
    // Signed by the same code, so only the id check can refuse it.
    expect(codeOf(() => decodeCursor('members', 'br_main', encodeCursor('members', 'br_main', 'a b')))).toBe(
      '400 invalid_request',
    );
  });
});

describe('readPageRequest', () => {
  const read = (query: string) => readPageRequest(buildEvent({ path: '/v1/members', query }), 'members', 'br_main');

  it('defaults to 50 and accepts 1 to 100', () => {
    expect(read('')).toEqual({ limit: 50 });
    expect(read('limit=1')).toEqual({ limit: 1 });
    expect(read('limit=100')).toEqual({ limit: 100 });
    expect(read('other=1')).toEqual({ limit: 50 });
  });

  it.each(['0', '101', 'abc', '1.5', '-1', '', '01', '1e2', ' 5', '5 ', '+5', '0x10', '1000'])(
    'refuses limit=%j',
    (limit) => {
      expect(codeOf(() => read(`limit=${encodeURIComponent(limit)}`))).toBe('400 invalid_request');
    },
  );

  it('accepts exactly the texts "1" to "100" of every text of up to four digits (LIMIT_PATTERN, published as the schema)', () => {
    const texts = Array.from({ length: 10_000 }, (_, n) => String(n)).flatMap((n) => [n, n.padStart(4, '0')]);
    const accepted = [...new Set(texts)].filter((text) => LIMIT_PATTERN.test(text));
    expect(accepted).toEqual(Array.from({ length: MAX_LIMIT }, (_, i) => String(i + 1)));
    for (const text of accepted) expect(read(`limit=${text}`)).toEqual({ limit: Number(text) });
  });

  it('refuses a repeated limit (API Gateway joins the values with a comma)', () => {
    expect(codeOf(() => read('limit=5&limit=5'))).toBe('400 invalid_request');
  });
});

describe('walking the lists through the handlers', () => {
  let key: string;

  beforeAll(async () => {
    ({ key } = await setUpBranches());
  });

  const walk = async (handler: typeof listMembers, path: string, limit: number) => {
    const ids: string[] = [];
    const pages: number[] = [];
    let cursor: string | null = null;
    do {
      const query: Record<string, string> = { limit: String(limit), ...(cursor ? { cursor } : {}) };
      const res = await invoke(handler, { path, key, query });
      expect(res.statusCode).toBe(200);
      expect(res.json.data.length).toBeLessThanOrEqual(limit);
      expect(res.json.has_more).toBe(res.json.next_cursor !== null);
      ids.push(...res.json.data.map((item: { id: string }) => item.id));
      pages.push(res.json.data.length);
      cursor = res.json.next_cursor;
      expect(pages.length).toBeLessThan(50);
    } while (cursor);
    return { ids, pages };
  };

  it.each([1, 5, 7, 22, 23, 24, 100])('visits every member exactly once, in order, with limit=%i', async (limit) => {
    const { ids, pages } = await walk(listMembers, '/v1/members', limit);
    expect(ids).toEqual(memberIds);
    // No empty trailing page: the last page is the one that says has_more=false.
    expect(pages.length).toBe(Math.ceil(memberIds.length / limit));
    expect(pages.every((size) => size > 0)).toBe(true);
  });

  it.each([1, 2, 3])('visits every active provider exactly once with limit=%i', async (limit) => {
    const { ids } = await walk(listProviders, '/v1/payment-providers', limit);
    expect(ids).toEqual(activeProviderIds);
  });

  it('uses 50 when no limit is given', async () => {
    const res = await invoke(listMembers, { path: '/v1/members', key });
    expect(res.json.data).toHaveLength(23);
    expect(res.json).toMatchObject({ has_more: false, next_cursor: null });
  });

  it('refuses a members cursor on the providers list and vice versa', async () => {
    const members = await invoke(listMembers, { path: '/v1/members', key, query: { limit: '1' } });
    const providers = await invoke(listProviders, { path: '/v1/payment-providers', key, query: { limit: '1' } });
    const onProviders = await invoke(listProviders, {
      path: '/v1/payment-providers',
      key,
      query: { cursor: members.json.next_cursor },
    });
    const onMembers = await invoke(listMembers, {
      path: '/v1/members',
      key,
      query: { cursor: providers.json.next_cursor },
    });
    expect([onProviders.statusCode, onProviders.json.error.code]).toEqual([400, 'invalid_request']);
    expect([onMembers.statusCode, onMembers.json.error.code]).toEqual([400, 'invalid_request']);
  });

  it.each([
    ['limit=0'],
    ['limit=101'],
    ['limit=abc'],
    ['limit=1.5'],
    ['limit=2&limit=3'],
    ['cursor=garbage'],
    ['cursor='],
    ['limit=5&cursor=bWVtXzA1.AAAAAAAAAAAAAAAAAAAAAA'],
  ])('answers ?%s with 400 invalid_request on both lists', async (query) => {
    for (const [handler, path] of [
      [listMembers, '/v1/members'],
      [listProviders, '/v1/payment-providers'],
    ] as const) {
      const res = await invoke(handler, { path, key, query });
      expect(res.statusCode).toBe(400);
      expect(res.json.error.code).toBe('invalid_request');
    }
  });
});
