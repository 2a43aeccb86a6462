/**
 * The rules of the key audit (`keys audit`, the console's findings): what a key's usage says it
 * needs, and the findings of an active key at a given time. lib/operator/keys.ts `auditKeys` runs it.
 */
import pLimit from 'p-limit';
import type { ApiKeyRecord } from '../../shared/domain/key-record';
import { routeKey, routes } from '../../shared/api/routes';
import type { Scope } from '../../shared/domain/schemas';
import { isUsable, keyState, msUntilExpiry } from '../../shared/domain/key-state';
import { hourOf, type KeyUse } from '../../shared/domain/rollups';
import type { OperatorContext } from './context';

const DAY = 86_400_000;

const SCOPE_OF_ROUTE = new Map(routes.map((route) => [routeKey(route), route.scope]));

/** A key's newest refused call and why it was refused. */
export interface LastRefused {
  at: string;
  as: RefusedAs;
}

/** A key's newest accepted call (its last use) and newest refused one. */
export interface LastUse {
  last_used_at: string | null;
  last_refused: LastRefused | null;
}

/** Why a key's call was refused, in the words the console and the CLI show. */
export type RefusedAs = 'revoked' | 'expired' | 'disabled' | 'over its rate limit' | 'IP not allowed' | 'missing scope';

/** Why a call was refused, from its status and the key (the usage record keeps the status only). */
const refusedAs = (key: ApiKeyRecord, at: string, status: number): RefusedAs => {
  if (status === 429) return 'over its rate limit';
  if (status === 403) return key.allowed_ips?.length ? 'IP not allowed' : 'missing scope';
  if (key.revoked_at !== undefined && key.revoked_at <= at) return 'revoked';
  if (key.expires_at !== undefined && key.expires_at <= at) return 'expired';
  return 'disabled';
};

/** A key's last accepted and last refused call, as its listing shows them. */
export const lastUseOf = (key: ApiKeyRecord, use: KeyUse | undefined): LastUse => ({
  last_used_at: use?.last_used_at ?? null,
  last_refused:
    use?.last_refused_at === undefined
      ? null
      : { at: use.last_refused_at, as: refusedAs(key, use.last_refused_at, use.last_refused_status ?? 401) },
});

/** Stable finding codes: scripts may branch on them. */
export const AUDIT_CODES = [
  'never_used',
  'unused',
  'no_expiry',
  'expires_soon',
  'unused_scopes',
  'no_ip_allowlist',
] as const;
export type AuditCode = (typeof AUDIT_CODES)[number];

const AUDIT_THRESHOLDS = {
  /** `never_used`: no call, and created at least this many days ago. */
  neverUsedAfterDays: 7,
  /** `unused`: no call in this many days (and the key is at least that old). */
  unusedAfterDays: 90,
  /** `expires_soon`: expires within this many days. */
  expiresWithinDays: 14,
} as const;

/** How far back the rollup facts read a key's calls for the routes it used (the `unused` horizon). */
const ROLLUP_FACTS_DAYS = AUDIT_THRESHOLDS.unusedAfterDays;
const FACTS_BASIS = `its calls of the last ${ROLLUP_FACTS_DAYS} days`;

/**
 * The usage facts of a listed key from the rollups (docs/console.md "Figures"): the scopes the
 * routes of its calls of the last ROLLUP_FACTS_DAYS days needed, from its hour items (its last use
 * is listed already): one Query for a key with calls, none for a key without, never a raw record.
 */
const rollupUsageFacts = async (
  ctx: OperatorContext,
  key: Pick<ApiKeyRecord, 'key_id' | 'branch_id' | 'scopes'> & { last_used_at: string | null },
  now: Date,
): Promise<Set<Scope>> => {
  if (!key.last_used_at) return new Set();
  const since = now.getTime() - ROLLUP_FACTS_DAYS * DAY;
  // No call in the window to judge scopes by: no unused_scopes finding (`unused` says it instead).
  if (Date.parse(key.last_used_at) < since) return new Set(key.scopes);
  const hours = await ctx.rollups.hours({
    branchId: key.branch_id,
    keyId: key.key_id,
    fromHour: hourOf(since),
    toHour: hourOf(now),
  });
  return new Set(hours.flatMap((hour) => Object.keys(hour.byRoute).flatMap((r) => SCOPE_OF_ROUTE.get(r) ?? [])));
};

export interface AuditFinding {
  code: AuditCode;
  message: string;
  /** `unused_scopes`: the scopes no call needed, which the key could do without. */
  scopes?: Scope[];
}

export interface KeyAudit {
  key_id: string;
  name: string;
  start: string;
  scopes: Scope[];
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
  last_refused: LastRefused | null;
  findings: AuditFinding[];
}

const daysBetween = (from: string, to: Date): number => (to.getTime() - Date.parse(from)) / DAY;

/** The findings for one active key, given the scopes its calls needed, at `now`. Pure. */
export const auditFindings = (key: ApiKeyRecord & LastUse, scopesNeeded: Set<Scope>, now: Date): AuditFinding[] => {
  const { neverUsedAfterDays, unusedAfterDays, expiresWithinDays } = AUDIT_THRESHOLDS;
  const findings: AuditFinding[] = [];
  const age = daysBetween(key.created_at, now);
  if (!key.last_used_at && age >= neverUsedAfterDays) {
    findings.push({ code: 'never_used', message: `no call since it was created ${Math.floor(age)} days ago` });
  }
  const idle = key.last_used_at ? daysBetween(key.last_used_at, now) : age;
  if (idle >= unusedAfterDays && age >= unusedAfterDays) {
    findings.push({ code: 'unused', message: `no call in the last ${unusedAfterDays} days` });
  }
  const untilExpiry = msUntilExpiry(key, now);
  if (untilExpiry === undefined) {
    findings.push({ code: 'no_expiry', message: 'never expires' });
  } else if (untilExpiry / DAY <= expiresWithinDays) {
    findings.push({ code: 'expires_soon', message: `expires at ${key.expires_at}` });
  }
  // Only from evidence: a key with no calls has no needs to compare with (never_used says so).
  const unneeded = key.last_used_at ? key.scopes.filter((scope) => !scopesNeeded.has(scope)) : [];
  if (unneeded.length > 0) {
    findings.push({
      code: 'unused_scopes',
      message: `none of ${FACTS_BASIS} needed ${unneeded.join(', ')}: a key without them would do`,
      scopes: unneeded,
    });
  }
  if (!key.allowed_ips || key.allowed_ips.length === 0) {
    findings.push({ code: 'no_ip_allowlist', message: 'usable from any IP address' });
  }
  return findings;
};

/**
 * Keys audited at once: a key with calls costs one Query of its rollups, and a page of 100 fired
 * together would be a burst against a real table.
 */
const AUDIT_CONCURRENCY = 10;

/**
 * The audit of the given keys that are active at `now` (revoked and expired keys open nothing),
 * with each key's usage facts from the rollups.
 */
export const auditOf = (
  ctx: OperatorContext,
  records: readonly (ApiKeyRecord & LastUse)[],
  now: Date,
): Promise<KeyAudit[]> =>
  pLimit(AUDIT_CONCURRENCY).map(
    records.filter((key) => isUsable(keyState(key, now))),
    async (key): Promise<KeyAudit> => ({
      key_id: key.key_id,
      name: key.name,
      start: key.start,
      scopes: key.scopes,
      created_at: key.created_at,
      expires_at: key.expires_at ?? null,
      last_used_at: key.last_used_at,
      last_refused: key.last_refused,
      findings: auditFindings(key, await rollupUsageFacts(ctx, key, now), now),
    }),
  );
