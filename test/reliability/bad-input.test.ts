/**
 * Bad input, property-based (fast-check, fixed seed): generated Authorization values through the
 * four real handlers (harness invoke, as Lambda is invoked), and generated provider ids, query
 * parameters, methods and paths through the in-process local gateway over real HTTP. Invariant of
 * every case: never a 5xx and never a crash; exactly the documented status, code, error shape and
 * headers; and a usage record exactly when a known key was used on a known route (the catch-all
 * answers unknown routes and methods before any key is read: no record). Records are audited
 * against the usage table at the end, together with secret hygiene.
 *
 * Reproduce a failure with the seed it prints: RELIABILITY_SEED=<seed> npx jest test/reliability/bad-input
 */
import fc from 'fast-check';
import { handler as getBranch } from '../../functions/get-branch';
import { handler as getProvider } from '../../functions/get-payment-provider';
import { handler as listMembers } from '../../functions/list-members';
import { handler as listProviders } from '../../functions/list-payment-providers';
import { startGateway, type Gateway } from '../../lib/local/gateway';
import { generateApiKey } from '../../shared/domain/api-key';
import { logger } from '../../shared/lambda/observability';
import { createKey, createTables, fixtureKeys, invoke, seedBranches } from '../support/harness';
import { activeProviderIds, reliabilityBranches } from '../../bench/reliability/branches';
import { rawRequest, stagePath } from './support/http';
import { UsageLedger } from '../../bench/reliability/ledger';
import { SecretTracker } from '../../bench/reliability/secrets';
import {
  auditProblems,
  auditUsage,
  captureAllLogs,
  expectDocumented,
  fromInvoke,
  report,
  secretHygiene,
  type AnyResponse,
} from './support/suite';

const SEED = Number(process.env.RELIABILITY_SEED ?? 20261122);
const RUNS = { authorization: 320, providerIds: 120, query: 120, methodsAndPaths: 80 };

const [branch, otherBranch] = reliabilityBranches(2) as [
  ReturnType<typeof reliabilityBranches>[number],
  ReturnType<typeof reliabilityBranches>[number],
];
const OWN_ACTIVE = new Set(activeProviderIds(branch));

type KeyKind = 'valid' | 'expired' | 'revoked' | 'noScope';
const KEY_KINDS: KeyKind[] = ['valid', 'expired', 'revoked', 'noScope'];
/** What a well-formed, stored key of each kind gets on a known route. */
const KNOWN_OUTCOME: Record<KeyKind, { status: number; code?: string }> = {
  valid: { status: 200 },
  expired: { status: 401, code: 'expired_api_key' },
  revoked: { status: 401, code: 'revoked_api_key' },
  noScope: { status: 403, code: 'insufficient_scope' },
};

const secrets = new SecretTracker();
const ledger = new UsageLedger();
const keys = {} as Record<KeyKind, { key: string; keyId: string }>;
const casesRun: Record<string, number> = {};
/** Well-formed (right prefix, length and checksum) but never stored. */
let unknownKey: string;
let gateway: Gateway;
let logs: ReturnType<typeof captureAllLogs>;
let cursors: { members: string; providers: string; otherMembers: string; otherProviders: string };

const count = (property: string) => {
  casesRun[property] = (casesRun[property] ?? 0) + 1;
};

beforeAll(async () => {
  logs = captureAllLogs([logger]);
  await createTables();
  await seedBranches([branch, otherBranch]);
  const make = async (kind: KeyKind, input: Parameters<typeof createKey>[0]) => {
    const { key, record } = await createKey({ branchId: branch.id, ...input });
    keys[kind] = { key: secrets.key(key), keyId: record.key_id };
  };
  await make('valid', {});
  await make('expired', { expiresAt: new Date(Date.now() - 60_000) });
  await make('revoked', {});
  await fixtureKeys.revoke(keys.revoked.keyId);
  await make('noScope', { scopes: ['write', 'team:read'] });
  const { key: otherKey, record: otherRecord } = await createKey({ branchId: otherBranch.id });
  secrets.key(otherKey);
  unknownKey = secrets.key(generateApiKey());
  gateway = await startGateway({ port: 0 });

  // Real cursors, to tamper with: this branch's and the other branch's, for both lists.
  const cursorOf = async (key: string, path: string) => {
    const res = await rawRequest(gateway.baseUrl, {
      path: stagePath(gateway.baseUrl, path),
      headers: { authorization: secrets.authorization(`Bearer ${key}`)! },
    });
    return res;
  };
  const pages = await Promise.all([
    cursorOf(keys.valid.key, '/v1/members?limit=2'),
    cursorOf(keys.valid.key, '/v1/payment-providers?limit=1'),
    cursorOf(otherKey, '/v1/members?limit=2'),
    cursorOf(otherKey, '/v1/payment-providers?limit=1'),
  ]);
  const [members, providers, otherMembers, otherProviders] = pages.map((page) => page.json.next_cursor as string) as [
    string,
    string,
    string,
    string,
  ];
  cursors = { members, providers, otherMembers, otherProviders };
  // Those four calls were made with known keys on known routes: they are audited like the rest.
  pages.forEach((page, i) => {
    ledger.expect(page.requestId, { keyId: i < 2 ? keys.valid.keyId : otherRecord.key_id, status: 200 });
  });
});

afterAll(async () => {
  logs?.restore();
  await gateway?.close();
});

const fcOptions = (numRuns: number, offset: number) => ({ seed: SEED + offset, numRuns, endOnFailure: true });

// ---------------------------------------------------------------- Authorization values

type AuthExpectation = { status: number; code: string; keyKind?: undefined } | { keyKind: KeyKind } | 'refused';
interface AuthCase {
  label: string;
  header: string | string[] | undefined;
  expect: AuthExpectation;
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const missing = { status: 401, code: 'missing_api_key' } as const;
const invalid = { status: 401, code: 'invalid_api_key' } as const;

const keyKind = fc.constantFrom(...KEY_KINDS);
const keyOf = (kind: KeyKind) => keys[kind].key;
const ows = (min: number, max: number) =>
  fc.array(fc.constantFrom(' ', '\t'), { minLength: min, maxLength: max }).map((chars) => chars.join(''));
const anyCaseBearer = fc
  .array(fc.boolean(), { minLength: 6, maxLength: 6 })
  .map((upper) => [...'bearer'].map((char, i) => (upper[i] ? char.toUpperCase() : char)).join(''));
/** A position strictly inside a key (never at either end, where whitespace would be trimmed). */
const inside = fc.integer({ min: 1, max: 52 });
const insertAt = (value: string, at: number, what: string) => value.slice(0, at) + what + value.slice(at);
const CONTROL_CHARS = [...Array.from({ length: 32 }, (_, i) => String.fromCharCode(i)), '\x7f'].filter(
  (char) => char !== '\t',
);

const authCases: fc.Arbitrary<AuthCase> = fc.oneof(
  fc.constant<AuthCase>({ label: 'no header', header: undefined, expect: missing }),
  fc
    .tuple(
      fc.constantFrom('Basic', 'Token', 'Digest', 'ApiKey', 'OAuth', 'Bearer-', 'Bearerx', 'Bearer:', 'B earer', 'wsk'),
      ows(1, 3),
      keyKind,
    )
    .map(([scheme, space, kind]) => ({
      label: 'other scheme',
      header: `${scheme}${space}${keyOf(kind)}`,
      expect: missing,
    })),
  fc.tuple(ows(0, 2), keyKind, ows(0, 2)).map(([before, kind, after]) => ({
    label: 'key without a scheme',
    header: `${before}${keyOf(kind)}${after}`,
    expect: missing,
  })),
  fc.tuple(ows(0, 2), fc.option(anyCaseBearer, { nil: '' }), ows(0, 6)).map(([before, scheme, after]) => ({
    label: 'empty token',
    header: `${before}${scheme}${after}`,
    expect: missing,
  })),
  fc.tuple(ows(0, 3), anyCaseBearer, ows(1, 4), ows(0, 3)).map(([before, scheme, gap, after]) => ({
    label: 'unknown well-formed key',
    header: `${before}${scheme}${gap}${unknownKey}${after}`,
    expect: invalid,
  })),
  fc.tuple(ows(0, 3), anyCaseBearer, ows(1, 4), keyKind, ows(0, 3)).map(([before, scheme, gap, kind, after]) => ({
    label: 'odd spacing and case',
    header: `${before}${scheme}${gap}${keyOf(kind)}${after}`,
    expect: { keyKind: kind },
  })),
  fc
    .tuple(keyKind, fc.constantFrom('sk_', 'wsk-', 'WSK_', 'wsx_', 'pk_', 'wsk__', '', 'wsk_wsk_', 'Wsk_', 'wsk'))
    .map(([kind, prefix]) => ({
      label: 'wrong prefix',
      header: `Bearer ${prefix}${keyOf(kind).slice(4)}`,
      expect: invalid,
    })),
  fc.tuple(keyKind, fc.integer({ min: 4, max: 52 }), fc.integer({ min: 1, max: 61 })).map(([kind, at, shift]) => {
    const key = keyOf(kind);
    const swapped = BASE62[(BASE62.indexOf(key[at]!) + shift) % 62]!;
    return {
      label: 'bad checksum',
      header: `Bearer ${key.slice(0, at)}${swapped}${key.slice(at + 1)}`,
      expect: invalid,
    };
  }),
  fc.tuple(keyKind, fc.integer({ min: 1, max: 52 })).map(([kind, length]) => ({
    label: 'truncated',
    header: `Bearer ${keyOf(kind).slice(0, length)}`,
    expect: invalid,
  })),
  fc
    .tuple(keyKind, fc.string({ unit: fc.constantFrom(...BASE62), minLength: 1, maxLength: 4 }))
    .map(([kind, extra]) => ({
      label: 'extended',
      header: `Bearer ${keyOf(kind)}${extra}`,
      expect: invalid,
    })),
  fc.tuple(keyKind, fc.constantFrom('repeated key', 'padded', 'spaces', 'random')).map(([kind, how]): AuthCase => {
    const key = keyOf(kind);
    const size = 8192;
    switch (how) {
      case 'repeated key':
        return { label: 'overlong', header: `Bearer ${key.repeat(Math.ceil(size / key.length))}`, expect: invalid };
      case 'padded':
        return { label: 'overlong', header: `Bearer ${key}${'A'.repeat(size)}`, expect: invalid };
      case 'spaces':
        return { label: 'overlong', header: `Bearer${' '.repeat(size)}`, expect: missing };
      default:
        return {
          label: 'overlong',
          header: `Bearer wsk_${Array.from({ length: size }, (_, i) => BASE62[(i * 7919) % 62]).join('')}`,
          expect: invalid,
        };
    }
  }),
  fc
    .tuple(
      keyKind,
      inside,
      fc.oneof(
        fc.constantFrom('é', 'ü', '€', '😀', '\u00a0', '\u200b', 'ｗ', 'ß', '\u0301', 'Ω', '\u2028', '\ufeff'),
        fc
          .string({ unit: 'grapheme', minLength: 1, maxLength: 3 })
          .filter((s) => [...s].some((char) => char.codePointAt(0)! > 0x7f)),
      ),
      fc.boolean(),
    )
    .map(([kind, at, char, replace]) => {
      const key = keyOf(kind);
      const changed = replace ? key.slice(0, at) + char + key.slice(at + 1) : insertAt(key, at, char);
      return { label: 'non-ASCII', header: `Bearer ${changed}`, expect: invalid };
    }),
  fc.tuple(keyKind, inside, fc.constantFrom(...CONTROL_CHARS)).map(([kind, at, char]) => ({
    label: 'control character in the token',
    header: `Bearer ${insertAt(keyOf(kind), at, char)}`,
    expect: invalid,
  })),
  fc.tuple(keyKind, fc.integer({ min: 1, max: 5 }), fc.constantFrom(...CONTROL_CHARS)).map(([kind, at, char]) => ({
    label: 'control character in the scheme',
    header: `${insertAt('Bearer', at, char)} ${keyOf(kind)}`,
    expect: missing,
  })),
  fc
    .tuple(keyKind, keyKind, fc.constantFrom<'array' | ',' | ', ' | ' , '>('array', ',', ', ', ' , '))
    .map(([first, second, how]) => {
      const values = [`Bearer ${keyOf(first)}`, `Bearer ${keyOf(second)}`];
      return {
        label: 'several Authorization headers',
        header: how === 'array' ? values : values.join(how),
        expect: invalid,
      };
    }),
  fc.tuple(keyKind, fc.constantFrom('Basic dXNlcjpwYXNz', 'Token abc', 'Digest x')).map(([kind, first]) => ({
    label: 'several headers, first not Bearer',
    header: [first, `Bearer ${keyOf(kind)}`],
    expect: missing,
  })),
  fc
    .tuple(fc.constantFrom('', 'Bearer ', 'bearer wsk_', 'Bearer wsk_'), fc.string({ unit: 'binary', maxLength: 120 }))
    .map(([prefix, noise]) => ({ label: 'noise', header: `${prefix}${noise}`, expect: 'refused' as const })),
);

const AUTH_ROUTES = [
  { path: '/v1/branch', handler: getBranch, check: (json: any) => json.object === 'branch' && json.id === branch.id },
  { path: '/v1/members', handler: listMembers, check: (json: any) => json.object === 'list' && json.data.length > 0 },
  {
    path: '/v1/payment-providers',
    handler: listProviders,
    check: (json: any) => json.object === 'list' && json.data.length === OWN_ACTIVE.size,
  },
  {
    path: '/v1/payment-providers/pp_stripe',
    pathParameters: { id: 'pp_stripe' },
    handler: getProvider,
    check: (json: any) => json.object === 'payment_provider' && json.name === `Stripe of branch 1`,
  },
];

/** Checks one response against its expectation and registers what it must have left in the usage table. */
const checkAuthOutcome = (res: AnyResponse, expectation: AuthExpectation, check: (json: any) => boolean) => {
  if (expectation === 'refused') {
    const code = res.json?.error?.code;
    expect(['missing_api_key', 'invalid_api_key']).toContain(code);
    expectDocumented(res, 401, code);
    ledger.expect(res.requestId, null);
    return;
  }
  if (expectation.keyKind === undefined) {
    expectDocumented(res, expectation.status, expectation.code);
    ledger.expect(res.requestId, null);
    return;
  }
  const { status, code } = KNOWN_OUTCOME[expectation.keyKind];
  expectDocumented(res, status, code);
  if (status === 200) expect(check(res.json)).toBe(true);
  ledger.expect(res.requestId, { keyId: keys[expectation.keyKind].keyId, status });
};

it(`answers ${RUNS.authorization} generated Authorization values with the documented 401/403/200`, async () => {
  await fc.assert(
    fc.asyncProperty(authCases, fc.constantFrom(...AUTH_ROUTES), async (authCase, route) => {
      count('authorization');
      const values = Array.isArray(authCase.header) ? authCase.header : [authCase.header];
      values.forEach((value) => secrets.authorization(value));
      secrets.authorization(values.join(','));
      const res = await invoke(route.handler, {
        path: route.path,
        ...(route.pathParameters ? { pathParameters: route.pathParameters } : {}),
        headers: { authorization: authCase.header },
      });
      checkAuthOutcome(fromInvoke(res), authCase.expect, route.check);
    }),
    fcOptions(RUNS.authorization, 1),
  );
});

// ---------------------------------------------------------------- gateway cases

const safeDecode = (value: string) => {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
};

/** One request through the gateway with a key of the given kind; the response as the caller sees it. */
const viaGateway = async (kind: KeyKind, method: string, path: string): Promise<AnyResponse> => {
  const authorization = secrets.authorization(`Bearer ${keyOf(kind)}`)!;
  return rawRequest(gateway.baseUrl, { method, path: stagePath(gateway.baseUrl, path), headers: { authorization } });
};

/** A known route: the key kind decides first (scope before handler), then the handler's answer. */
const expectRouteOutcome = (res: AnyResponse, kind: KeyKind, handlerOutcome: { status: number; code?: string }) => {
  const outcome = kind === 'valid' ? handlerOutcome : KNOWN_OUTCOME[kind];
  expectDocumented(res, outcome.status, outcome.code);
  ledger.expect(res.requestId, { keyId: keys[kind].keyId, status: outcome.status });
  return outcome;
};

/** An unknown route or method: the catch-all's answer, with no key read and no record. */
const expectFallback = (res: AnyResponse, status: 404 | 405, withBody = true) => {
  expectDocumented(res, status, status === 404 ? 'not_found' : 'method_not_allowed', withBody);
  ledger.expect(res.requestId, null);
};

const ID_CHARS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-';
/** A raw (percent-encoded as sent) path segment after /v1/payment-providers/. */
const providerSegment = fc.oneof(
  fc.constantFrom(...OWN_ACTIVE),
  fc.constantFrom('pp_b1_old', 'pp_shared_old', 'pp_b2_adyen', 'pp_b2_old', 'pp_nope', 'PP_STRIPE', 'pp_stripe%20'),
  fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/),
  fc.tuple(fc.integer({ min: 65, max: 4000 }), fc.constantFrom(...ID_CHARS)).map(([n, char]) => char.repeat(n)),
  fc.integer({ min: 1, max: 3000 }).map((n) => `pp_stripe${'x'.repeat(n)}`),
  fc.constantFrom(
    '..',
    '.',
    '%2e%2e',
    '%2E%2E',
    '..%2F..%2Fbranch',
    '%2F',
    'a%2Fb',
    'pp_stripe%2F',
    '%2Fpp_stripe',
    '..%5C..%5Cbranch',
    '%252F',
    '%00',
    'pp_stripe%00',
    '%zz',
    '%',
    '%E0%A4%A',
    'pp%5Fstripe',
    '%70%70%5f%73%74%72%69%70%65',
  ),
  fc.constantFrom('', '../branch', '../../v1/branch', 'pp_stripe/', 'pp_stripe/..', 'a/b', './pp_stripe', '/pp_stripe'),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }).map(encodeURIComponent),
);

it(`answers ${RUNS.providerIds} generated provider ids with 200, the same 404, or the catch-all 404`, async () => {
  await fc.assert(
    fc.asyncProperty(providerSegment, fc.constantFrom(...KEY_KINDS, 'valid', 'valid'), async (segment, kind) => {
      count('providerIds');
      const res = await viaGateway(kind, 'GET', `/v1/payment-providers/${segment}`);
      if (segment === '' || segment.includes('/')) return expectFallback(res, 404);
      const id = safeDecode(segment);
      const outcome = expectRouteOutcome(
        res,
        kind,
        OWN_ACTIVE.has(id) ? { status: 200 } : { status: 404, code: 'not_found' },
      );
      if (outcome.status === 200)
        expect(res.json).toMatchObject({ id, object: 'payment_provider', name: expect.stringContaining('branch 1') });
    }),
    fcOptions(RUNS.providerIds, 2),
  );
});

/** A query-parameter case: its raw `name=value` pairs and whether it is valid. */
interface QueryCase {
  label: string;
  pairs: string[];
  valid: boolean;
  limit?: number;
}

const isValidLimit = (value: string) => /^[1-9][0-9]*$/.test(value) && Number(value) <= 100;
const limitValue = fc.oneof(
  fc.integer({ min: 1, max: 100 }).map(String),
  fc.integer({ min: -1_000_000, max: 0 }).map(String),
  fc.integer({ min: 101, max: 2_000_000_000 }).map(String),
  fc.constantFrom('99999999999999999999999', '-0', '1e2', '1.0', '0x10', '+5', '05', ' 5', '5 ', '', 'NaN', 'Infinity'),
  fc.constantFrom('١٢', 'fifty', '50abc', '1,2', '١', '²', '10%'),
  fc.string({ unit: 'grapheme-ascii', maxLength: 6 }),
);

const base64urlChars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
/** Ways to alter a real cursor; every one must be a 400, whatever it decodes to. */
const tamper = (cursor: string, how: string, at: number, shift: number): string => {
  const [encoded = '', digest = ''] = cursor.split('.');
  const swap = (text: string, index: number) => {
    const i = index % text.length;
    const next = base64urlChars[(base64urlChars.indexOf(text[i]!) + 1 + (shift % 63)) % 64]!;
    return text.slice(0, i) + next + text.slice(i + 1);
  };
  switch (how) {
    case 'change a character of the position':
      return `${swap(encoded, at)}.${digest}`;
    case 'change the last character of the position':
      return `${swap(encoded, encoded.length - 1)}.${digest}`;
    case 'change a character of the digest':
      return `${encoded}.${swap(digest, at)}`;
    case 'another position, same digest':
      return `${Buffer.from(`mem_b1_0${(at % 7) + 1}`).toString('base64url')}.${digest}`;
    case 'truncate the digest':
      return `${encoded}.${digest.slice(0, -1)}`;
    case 'add a part':
      return `${cursor}.x`;
    case 'drop the digest':
      return encoded;
    case 'pad the position':
      return `${encoded}=.${digest}`;
    case 'insert a character outside the alphabet':
      return `${encoded.slice(0, 1)}!${encoded.slice(1)}.${digest}`;
    default:
      return cursor.toUpperCase();
  }
};
const TAMPERINGS = [
  'change a character of the position',
  'change the last character of the position',
  'change a character of the digest',
  'another position, same digest',
  'truncate the digest',
  'add a part',
  'drop the digest',
  'pad the position',
  'insert a character outside the alphabet',
  'upper-case it',
];

const listName = fc.constantFrom<'members' | 'providers'>('members', 'providers');
const queryCase = (list: 'members' | 'providers'): fc.Arbitrary<QueryCase> => {
  const own = () => (list === 'members' ? cursors.members : cursors.providers);
  const cursorCase = fc.oneof(
    fc.constant(null).map(() => ({ label: 'real cursor', value: own(), valid: true })),
    fc.string({ unit: 'grapheme', maxLength: 40 }).map((value) => ({ label: 'garbage cursor', value, valid: false })),
    fc.tuple(fc.constantFrom(...TAMPERINGS), fc.nat(), fc.nat()).map(([how, at, shift]) => ({
      label: `tampered cursor: ${how}`,
      value: tamper(own(), how, at, shift),
      valid: false,
    })),
    fc.constantFrom('the other list', 'another branch, same list', 'another branch, other list').map((how) => ({
      label: `cursor of ${how}`,
      value:
        how === 'the other list'
          ? list === 'members'
            ? cursors.providers
            : cursors.members
          : how === 'another branch, same list'
            ? list === 'members'
              ? cursors.otherMembers
              : cursors.otherProviders
            : list === 'members'
              ? cursors.otherProviders
              : cursors.otherMembers,
      valid: false,
    })),
  );
  return fc
    .record({
      limit: fc.option(
        fc.oneof(
          limitValue.map((v) => [v]),
          fc.tuple(limitValue, limitValue),
        ),
        { nil: undefined },
      ),
      cursor: fc.option(cursorCase, { nil: undefined }),
      repeatCursor: fc.boolean(),
    })
    .map(({ limit, cursor, repeatCursor }) => {
      const pairs: string[] = [];
      let valid = true;
      const labels: string[] = [];
      if (limit) {
        limit.forEach((value) => pairs.push(`limit=${encodeURIComponent(value)}`));
        valid &&= limit.length === 1 && isValidLimit(limit[0]!);
        labels.push(limit.length > 1 ? 'repeated limit' : `limit ${JSON.stringify(limit[0])}`);
      }
      if (cursor) {
        const times = repeatCursor ? 2 : 1;
        for (let i = 0; i < times; i += 1) pairs.push(`cursor=${encodeURIComponent(cursor.value)}`);
        valid &&= cursor.valid && times === 1;
        labels.push(times > 1 ? `repeated ${cursor.label}` : cursor.label);
      }
      return {
        label: labels.join(', ') || 'no parameters',
        pairs,
        valid,
        ...(limit?.length === 1 && valid ? { limit: Number(limit[0]) } : {}),
      };
    });
};

it(`answers ${RUNS.query} generated limit/cursor combinations with 200 or 400 invalid_request`, async () => {
  await fc.assert(
    fc.asyncProperty(
      listName.chain((list) => fc.tuple(fc.constant(list), queryCase(list))),
      async ([list, query]) => {
        count('query');
        const path = list === 'members' ? '/v1/members' : '/v1/payment-providers';
        const res = await viaGateway('valid', 'GET', `${path}${query.pairs.length ? `?${query.pairs.join('&')}` : ''}`);
        const outcome = expectRouteOutcome(
          res,
          'valid',
          query.valid ? { status: 200 } : { status: 400, code: 'invalid_request' },
        );
        if (outcome.status === 200) {
          expect(res.json).toMatchObject({ object: 'list', data: expect.any(Array) });
          expect(res.json.data.length).toBeLessThanOrEqual(query.limit ?? 50);
          // Never another branch's item, whatever the cursor said.
          expect(res.body).not.toMatch(/branch 2|b2_/);
        }
      },
    ),
    fcOptions(RUNS.query, 3),
  );
});

const KNOWN_PATHS = ['/v1/branch', '/v1/members', '/v1/payment-providers', '/v1/payment-providers/pp_stripe'];
const OTHER_METHODS = ['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD', 'TRACE', 'PROPFIND', 'MKCOL', 'PURGE'];
const unknownPath = fc.oneof(
  fc.constantFrom(
    '/v1/branch/',
    '/v1/Branch',
    '/V1/branch',
    '/v2/branch',
    '/v1',
    '/',
    '/v1/members/mem_01',
    '/v1/payment-providers/a/b',
    '/v1/branch;x',
    '/v1//branch',
    '/v1/keys',
    '/v1/usage',
  ),
  fc
    .stringMatching(/^[a-z-]{1,20}$/)
    .filter((name) => !['branch', 'members', 'payment-providers'].includes(name))
    .map((name) => `/v1/${name}`),
);

it(`answers ${RUNS.methodsAndPaths} generated methods and unknown paths from the catch-all, with no record`, async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(
        fc.tuple(fc.constantFrom(...OTHER_METHODS), fc.constantFrom(...KNOWN_PATHS), fc.constant(405 as const)),
        fc.tuple(fc.constantFrom('GET', ...OTHER_METHODS), unknownPath, fc.constant(404 as const)),
      ),
      keyKind,
      async ([method, path, status], kind) => {
        count('methodsAndPaths');
        const res = await viaGateway(kind, method, path);
        // A HEAD answer has no body on the wire: status and headers only.
        expectFallback(res, status, method !== 'HEAD');
      },
    ),
    fcOptions(RUNS.methodsAndPaths, 4),
  );
});

it('answers a path outside the stage with the catch-all 404 and no record', async () => {
  const authorization = secrets.authorization(`Bearer ${keys.valid.key}`)!;
  const res = await rawRequest(gateway.baseUrl, { path: '/v1/branch', headers: { authorization } });
  expectFallback(res, 404);
});

it('ran at least 500 generated cases', () => {
  const total = Object.values(casesRun).reduce((sum, n) => sum + n, 0);
  report(`bad input: ${total} generated cases (seed ${SEED}): ${JSON.stringify(casesRun)}`);
  expect(total).toBeGreaterThanOrEqual(500);
});

it('left exactly one usage record per request made with a known key on a known route, and no other', async () => {
  const audit = await auditUsage(ledger, logs.capture.entries);
  report(
    `bad input usage: ${audit.requests} requests, ${audit.expected} records expected, ${audit.inTable} in the table, ` +
      `${audit.logged} logged, ${audit.lost.length} lost, ${audit.unexpected.length} unexpected`,
  );
  expect(auditProblems(audit)).toEqual({ lost: 0, unexpected: 0, duplicates: 0, mismatched: 0 });
  expect(audit.inTable).toBe(audit.expected);
  expect(audit.expected).toBeGreaterThan(200);
});

it('stored and logged no plaintext key and no Authorization value', async () => {
  const hygiene = await secretHygiene(secrets, logs.capture.text);
  report(
    `bad input hygiene: searched ${hygiene.bytesSearched} bytes for ${hygiene.keys} keys and ` +
      `${hygiene.authorizations} Authorization values: ${hygiene.findings.length} found`,
  );
  expect(hygiene.findings).toEqual([]);
  expect(hygiene.authorizations).toBeGreaterThan(100);
});
