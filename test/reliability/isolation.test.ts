/**
 * Isolation: four branches seeded, one read key each. Every key is probed with every other
 * branch's provider ids (active and inactive, unique and shared) and with every other branch's
 * list cursors, through the real handlers on dynalite. 0 leaks: an id the key's own branch does
 * not have as an active provider is a 404 whose body (minus request_id) and headers (minus
 * X-Request-Id) are byte-for-byte those of a truly unknown id; a foreign cursor is the same 400 as
 * a garbage one; a shared id answers with the key's own branch's object; full listings hold
 * exactly the key's own branch's items.
 */
import { handler as getBranch } from '../../functions/get-branch';
import { handler as getProvider } from '../../functions/get-payment-provider';
import { handler as listMembers } from '../../functions/list-members';
import { handler as listProviders } from '../../functions/list-payment-providers';
import { logger } from '../../shared/lambda/observability';
import type { SeedBranch } from '../../shared/domain/schemas';
import { createKey, createTables, invoke, seedBranches } from '../support/harness';
import { activeProviderIds, reliabilityBranches } from '../../bench/reliability/branches';
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

const BRANCHES = reliabilityBranches(4);
const LIST_PATH = { members: '/v1/members', providers: '/v1/payment-providers' } as const;
const secrets = new SecretTracker();
const ledger = new UsageLedger();
const keys = new Map<string, { key: string; keyId: string }>();
let logs: ReturnType<typeof captureAllLogs>;
let probes = 0;
const leaks: string[] = [];

beforeAll(async () => {
  logs = captureAllLogs([logger]);
  await createTables();
  await seedBranches(BRANCHES);
  for (const branch of BRANCHES) {
    const { key, record } = await createKey({ branchId: branch.id });
    keys.set(branch.id, { key: secrets.key(key), keyId: record.key_id });
    secrets.authorization(`Bearer ${key}`);
  }
});

afterAll(() => logs?.restore());

/** Strings only another branch's data contains (ids like `pp_b2_…`, names like "… of branch 2"). */
const foreignMarkers = (own: SeedBranch) =>
  BRANCHES.filter((other) => other.id !== own.id).flatMap((other) => {
    const n = other.id.replace('br_rel_', '');
    return [other.id, `_b${n}_`, `b${n}@`, `branch ${n}"`, `City${n}`, `Business ${n} `];
  });

/** Calls a handler with a branch's key, counts the probe, registers its record, checks for leaks. */
const call = async (
  branch: SeedBranch,
  handler: typeof getBranch,
  path: string,
  extra: { pathParameters?: Record<string, string>; query?: Record<string, string> } = {},
): Promise<AnyResponse> => {
  const { key, keyId } = keys.get(branch.id)!;
  const res = fromInvoke(await invoke(handler, { path, key, ...extra }));
  probes += 1;
  ledger.expect(res.requestId, { keyId, status: res.status });
  for (const marker of foreignMarkers(branch)) {
    if (res.body.includes(marker)) leaks.push(`${branch.id} ${path}: ${marker}`);
  }
  return res;
};

/** A response minus what differs between any two calls: the request id and the key's remaining calls. */
const comparable = (res: AnyResponse) => {
  const { 'X-Request-Id': _id, RateLimit: _left, ...headers } = res.headers;
  return { status: res.status, headers, error: { ...res.json.error, request_id: '<id>' } };
};

const getProviderOf = (branch: SeedBranch, id: string) =>
  call(branch, getProvider, `/v1/payment-providers/${id}`, { pathParameters: { id } });

const firstCursor = async (branch: SeedBranch, list: 'members' | 'providers') => {
  const res = await call(branch, list === 'members' ? listMembers : listProviders, LIST_PATH[list], {
    query: { limit: list === 'members' ? '2' : '1' },
  });
  expectDocumented(res, 200);
  expect(res.json.next_cursor).toEqual(expect.any(String));
  return res.json.next_cursor as string;
};

describe.each(BRANCHES.map((branch) => [branch.id, branch] as const))('the key of %s', (_id, own) => {
  const others = BRANCHES.filter((other) => other.id !== own.id);
  const ownActive = new Set(activeProviderIds(own));

  it("gets the same 404 for every other branch's provider id as for an id that exists nowhere", async () => {
    const unknown = await getProviderOf(own, 'pp_exists_nowhere');
    expectDocumented(unknown, 404, 'not_found');
    const ownInactive = await getProviderOf(own, `pp_b${own.id.replace('br_rel_', '')}_old`);
    expect(comparable(ownInactive)).toEqual(comparable(unknown));
    for (const other of others) {
      for (const provider of other.payment_providers) {
        const res = await getProviderOf(own, provider.id);
        if (ownActive.has(provider.id)) {
          // A shared id: this branch's own provider, never the other's.
          expectDocumented(res, 200);
          expect(res.json).toMatchObject({
            id: provider.id,
            name: expect.stringContaining(`of branch ${own.id.slice(7)}`),
          });
        } else {
          expectDocumented(res, 404, 'not_found');
          expect(comparable(res)).toEqual(comparable(unknown));
        }
      }
    }
  });

  it("gets the same 400 for every other branch's cursor as for a garbage cursor, on both lists", async () => {
    for (const list of ['members', 'providers'] as const) {
      const handler = list === 'members' ? listMembers : listProviders;
      const garbage = await call(own, handler, LIST_PATH[list], { query: { cursor: 'garbage.cursor' } });
      expectDocumented(garbage, 400, 'invalid_request');
      for (const other of others) {
        for (const from of ['members', 'providers'] as const) {
          const cursor = await firstCursor(other, from);
          const res = await call(own, handler, LIST_PATH[list], { query: { cursor } });
          expectDocumented(res, 400, 'invalid_request');
          expect(comparable(res)).toEqual(comparable(garbage));
        }
      }
      // The key's own cursor still works on its own list (the probe above is not vacuous).
      const ownCursor = await firstCursor(own, list);
      expectDocumented(await call(own, handler, LIST_PATH[list], { query: { cursor: ownCursor } }), 200);
    }
  });

  it("lists exactly its own branch's members and active providers, page by page", async () => {
    const branch = await call(own, getBranch, '/v1/branch');
    expect(branch.json.id).toBe(own.id);
    for (const [list, handler, expected] of [
      ['members', listMembers, own.members.map((member) => member.id)],
      ['providers', listProviders, [...ownActive]],
    ] as const) {
      const seen: string[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < 20; page += 1) {
        const res = await call(own, handler, LIST_PATH[list], { query: { limit: '2', ...(cursor ? { cursor } : {}) } });
        expectDocumented(res, 200);
        seen.push(...res.json.data.map((item: { id: string }) => item.id));
        cursor = res.json.next_cursor ?? undefined;
        if (!cursor) break;
      }
      expect(seen.sort()).toEqual([...expected].sort());
    }
  });
});

it('found 0 leaks over every probe', () => {
  report(
    `isolation: ${probes} probes by ${BRANCHES.length} keys across ${BRANCHES.length} branches, ${leaks.length} leaks`,
  );
  expect(leaks).toEqual([]);
  expect(probes).toBeGreaterThan(150);
});

it('recorded every probe against the key that made it', async () => {
  const audit = await auditUsage(ledger, logs.capture.entries);
  expect(auditProblems(audit)).toEqual({ lost: 0, unexpected: 0, duplicates: 0, mismatched: 0 });
  expect(audit.inTable).toBe(probes);
});

it('stored and logged no plaintext key and no Authorization value', async () => {
  const hygiene = await secretHygiene(secrets, logs.capture.text);
  expect(hygiene.findings).toEqual([]);
});
