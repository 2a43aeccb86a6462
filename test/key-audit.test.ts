/**
 * `auditKeys` (lib/operator/keys.ts) with a faked clock: every finding code, at and around its
 * threshold, from keys and calls (usage records and their rollups) written to the embedded DynamoDB at chosen times.
 */
import { createOperatorContext, type OperatorContext } from '../lib/operator/context';
import { AUDIT_CODES, type AuditCode } from '../lib/operator/key-audit';
import { parseGrace } from '../lib/operator/input';
import { auditKeys, requireKeyOfBranch } from '../lib/operator/keys';
import { padSequence } from '../shared/domain/rollups';
import type { Scope } from '../shared/domain/schemas';
import { mainBranch, otherBranch } from './support/fixtures';
import { createKey, fixtureKeys, fixtureUsage, setUpBranches } from './support/harness';

const NOW = new Date('2031-03-01T12:00:00.000Z');
const DAY = 86_400_000;
const daysAgo = (days: number) => new Date(NOW.getTime() - days * DAY);
const BRANCH = otherBranch.id;

let ctx: OperatorContext;
const ids: Record<string, string> = {};

let sequence = 0;
/** A call: its usage record, and that record applied to the rollups as the aggregator does (the audit reads those). */
const used = async (keyId: string, at: Date, route = 'GET /v1/branch', status = 200) => {
  const record = {
    key_id: keyId,
    branch_id: BRANCH,
    method: 'GET',
    path: '/api/v1/branch',
    route,
    status,
    response_time_ms: 3,
    timestamp: at.toISOString(),
    request_id: `req-${keyId}-${at.getTime()}`,
  };
  await fixtureUsage.put(record, 90);
  sequence += 1;
  await ctx.rollups.apply([{ record, source: `audit|${BRANCH}`, sequence: padSequence(String(sequence))! }], 400);
};

const key = async (
  label: string,
  options: { createdDaysAgo: number; scopes?: Scope[]; expiresInDays?: number; allowedIps?: string[] },
) => {
  const { record } = await createKey({
    branchId: BRANCH,
    name: label,
    scopes: options.scopes ?? ['read'],
    now: daysAgo(options.createdDaysAgo),
    allowedIps: options.allowedIps ?? ['10.0.0.0/8'],
    ...(options.expiresInDays === undefined
      ? {}
      : { expiresAt: new Date(NOW.getTime() + options.expiresInDays * DAY) }),
  });
  ids[label] = record.key_id;
  return record.key_id;
};

beforeAll(async () => {
  await setUpBranches();
  ctx = createOperatorContext(process.env);
  const long = 365;
  // never_used: 7 days is the threshold.
  await key('idle-8d', { createdDaysAgo: 8, expiresInDays: long });
  await key('idle-6d', { createdDaysAgo: 6, expiresInDays: long });
  // unused: no call in 90 days.
  await used(await key('last-call-100d', { createdDaysAgo: 200, expiresInDays: long }), daysAgo(100));
  await used(await key('last-call-80d', { createdDaysAgo: 200, expiresInDays: long }), daysAgo(80));
  // no_expiry and expires_soon (14 days).
  await used(await key('no-expiry', { createdDaysAgo: 30 }), daysAgo(1));
  await used(await key('expires-13d', { createdDaysAgo: 30, expiresInDays: 13 }), daysAgo(1));
  await used(await key('expires-15d', { createdDaysAgo: 30, expiresInDays: 15 }), daysAgo(1));
  // unused_scopes: every call needed read only.
  const wide = await key('wide', { createdDaysAgo: 30, expiresInDays: long, scopes: ['read', 'team:read', 'write'] });
  await used(wide, daysAgo(2), 'GET /v1/branch');
  await used(wide, daysAgo(1), 'GET /v1/payment-providers/{id}');
  // A refused call later than its last use: over its rate limit, not a use.
  await used(wide, daysAgo(0.5), 'GET /v1/branch', 429);
  // no_ip_allowlist.
  await used(await key('open', { createdDaysAgo: 30, expiresInDays: long, allowedIps: [] }), daysAgo(1));
  // Clean: nothing to say.
  await used(await key('clean', { createdDaysAgo: 30, expiresInDays: long }), daysAgo(1));
  // Not audited: revoked and expired keys open nothing any more.
  await fixtureKeys.revoke(await key('revoked', { createdDaysAgo: 30 }), NOW);
  await key('expired', { createdDaysAgo: 30, expiresInDays: -1 });
});

afterAll(() => ctx.close());

const codesOf = async (): Promise<Record<string, AuditCode[]>> => {
  const report = await auditKeys(ctx, { branchId: BRANCH, now: NOW });
  const byId = new Map(report.keys.map((audit) => [audit.key_id, audit.findings.map((finding) => finding.code)]));
  return Object.fromEntries(
    Object.entries(ids)
      .filter(([, id]) => byId.has(id))
      .map(([label, id]) => [label, byId.get(id) ?? []]),
  );
};

describe('keys audit', () => {
  it('reports each finding code at its threshold, and nothing for a clean key', async () => {
    expect(await codesOf()).toEqual({
      'idle-8d': ['never_used'],
      'idle-6d': [],
      'last-call-100d': ['unused'],
      'last-call-80d': [],
      'no-expiry': ['no_expiry'],
      'expires-13d': ['expires_soon'],
      'expires-15d': [],
      wide: ['unused_scopes'],
      open: ['no_ip_allowlist'],
      clean: [],
    });
  });

  it('names the scopes no call needed: the right-sizing suggestion', async () => {
    const report = await auditKeys(ctx, { branchId: BRANCH, now: NOW });
    const wide = report.keys.find((audit) => audit.key_id === ids.wide);
    expect(wide?.findings).toEqual([
      { code: 'unused_scopes', scopes: ['team:read', 'write'], message: expect.stringContaining('team:read, write') },
    ]);
    expect(wide?.last_used_at).toBe(daysAgo(1).toISOString());
    expect(wide?.last_refused).toEqual({ at: daysAgo(0.5).toISOString(), as: 'over its rate limit' });
  });

  it('a key never used and older than 90 days is both never_used and unused', async () => {
    const report = await auditKeys(ctx, { branchId: BRANCH, now: new Date(NOW.getTime() + 100 * DAY) });
    const idle = report.keys.find((audit) => audit.key_id === ids['idle-8d']);
    expect(idle?.findings.map((finding) => finding.code)).toEqual(['never_used', 'unused']);
  });

  it('has stable codes and refuses an unknown branch', async () => {
    expect(AUDIT_CODES).toEqual([
      'never_used',
      'unused',
      'no_expiry',
      'expires_soon',
      'unused_scopes',
      'no_ip_allowlist',
    ]);
    await expect(auditKeys(ctx, { branchId: 'br_nope', now: NOW })).rejects.toThrow('Unknown branch "br_nope"');
    // A branch's audit never lists another branch's keys.
    const main = await auditKeys(ctx, { branchId: mainBranch.id, now: NOW });
    expect(main.keys.some((audit) => Object.values(ids).includes(audit.key_id))).toBe(false);
  });
});

describe('operator helpers', () => {
  it("requireKeyOfBranch returns a key of the branch and refuses another branch's key as unknown", async () => {
    const id = ids.clean ?? '';
    await expect(requireKeyOfBranch(ctx, BRANCH, id)).resolves.toMatchObject({ key_id: id, branch_id: BRANCH });
    await expect(requireKeyOfBranch(ctx, mainBranch.id, id)).rejects.toThrow(
      `Unknown key id "${id}" for branch "${mainBranch.id}"`,
    );
    await expect(requireKeyOfBranch(ctx, 'br_nope', id)).rejects.toThrow('Unknown branch "br_nope"');
  });

  it.each([
    ['0', 0],
    ['30s', 30_000],
    ['15m', 900_000],
    ['24h', DAY],
    ['7d', 7 * DAY],
    ['365d', 365 * DAY],
  ])('parseGrace(%j) = %i ms', (value, ms) => {
    expect(parseGrace(value)).toBe(ms);
  });

  it.each(['', '00', '1', '1w', '1.5h', '-1h', '366d', '24 h', '0s0'])('parseGrace refuses %j', (value) => {
    expect(() => parseGrace(value)).toThrow(/^grace must be 0 or a duration/);
  });
});
