/**
 * The operations behind the branch's settings pages for API keys and API usage: the library a
 * settings page would call, and what the `branch-api` CLI runs. Every input is checked here, so
 * a bad one is an OperatorError with a one-line message, never a half-done write.
 */
import { readFile } from 'node:fs/promises';
import type { z } from 'zod';
import { InvalidCidrError, parseAllowlist } from '../../shared/domain/cidr';
import { formatRateLimit, InvalidRateLimitError, parseRateLimit } from '../../shared/domain/rate-limit';
import { KeyNotFoundError, type ApiKeyRecord } from '../../shared/domain/key-record';
import type { UsageRecord } from '../../shared/domain/usage-record';
import { SCOPES, ScopeSchema, SeedFileSchema, type Scope, type SeedFile } from '../../shared/domain/schemas';
import type { OperatorContext } from './context';
import { parseIsoDate } from './dates';
import { invalidInput, OperatorError } from './errors';
import { keyState, type KeyState } from '../../shared/domain/key-state';

export { OperatorError, OPERATOR_ERROR_CODES, type OperatorErrorCode } from './errors';
export { keyState, KEY_STATES, type KeyState } from '../../shared/domain/key-state';
export { parseIsoDate } from './dates';

/** Parses a comma-separated scope list; an empty entry (`read,,`, `,read`) is a typo, not ignored. */
export const parseScopes = (value: string): Scope[] => {
  if (!value.trim()) throw invalidInput('scopes', `--scopes needs at least one of: ${SCOPES.join(', ')}`);
  const scopes = value.split(',').map((scope) => scope.trim());
  if (scopes.includes('')) {
    throw invalidInput(
      'scopes',
      `--scopes has an empty entry in "${value}"; separate scopes with single commas, e.g. read,team:read`,
    );
  }
  const unknown = scopes.filter((scope) => !ScopeSchema.safeParse(scope).success);
  if (unknown.length > 0) {
    throw invalidInput(
      'scopes',
      `Unknown scope ${unknown.map((s) => `"${s}"`).join(', ')}; allowed: ${SCOPES.join(', ')}`,
    );
  }
  return [...new Set(scopes as Scope[])];
};

/** `--allow-ip 203.0.113.0/24,2001:db8::1` → canonical CIDR entries (docs/decisions.md "Key lifecycle"). */
export const parseAllowIps = (value: string): string[] => {
  try {
    return parseAllowlist(value);
  } catch (error) {
    if (error instanceof InvalidCidrError) throw invalidInput('allow_ip', `--allow-ip: ${error.message}`);
    throw error;
  }
};

export const requireBranch = async (ctx: OperatorContext, branchId: string): Promise<void> => {
  if (!(await ctx.branchData.getBranch(branchId)))
    throw new OperatorError(`Unknown branch "${branchId}"`, 'unknown_branch', 'branch');
};

export interface CreateKeyRequest {
  branchId: string;
  /** Comma-separated scopes, e.g. `read,team:read`. */
  scopes: string;
  /** ISO 8601; must be in the future. */
  expires?: string;
  name?: string;
  /** Comma-separated IPv4/IPv6 addresses or CIDR blocks the key may be used from. */
  allowIps?: string;
  /** `N/s`, `N/min` or `N/h`; absent: the deployment's default. */
  rateLimit?: string;
  now?: Date;
}

/** Creates a key. The returned `key` is the only time its value is ever available. */
export const createKey = async (ctx: OperatorContext, request: CreateKeyRequest) => {
  const now = request.now ?? new Date();
  const scopes = parseScopes(request.scopes);
  const expiresAt = request.expires === undefined ? undefined : parseFutureExpiry(request.expires, now);
  if (request.name !== undefined) parseName(request.name);
  const allowedIps = request.allowIps === undefined ? undefined : parseAllowIps(request.allowIps);
  const rateLimit = request.rateLimit === undefined ? undefined : parseRateLimitOption(request.rateLimit);
  await requireBranch(ctx, request.branchId);
  return ctx.keys.create({
    branchId: request.branchId,
    scopes,
    now,
    actor: await ctx.actor(),
    ...(allowedIps ? { allowedIps } : {}),
    ...(expiresAt ? { expiresAt } : {}),
    ...(request.name ? { name: request.name.trim() } : {}),
    ...(rateLimit ? { rateLimit } : {}),
  });
};

/** `--expires`: a time after `now`. */
export const parseFutureExpiry = (value: string, now: Date): Date => {
  const expiresAt = parseIsoDate(value, '--expires');
  // A key with this expiry would be expired already (keyState is the one expiry-versus-clock rule).
  if (keyState({ expires_at: expiresAt.toISOString() }, now) === 'expired') {
    throw invalidInput('expires', `--expires must be in the future; got ${expiresAt.toISOString()}`);
  }
  return expiresAt;
};

/** Longest key name accepted. */
export const MAX_NAME_LENGTH = 200;

/** `--name`: trimmed, not empty, at most MAX_NAME_LENGTH characters. */
export const parseName = (value: string): string => {
  const name = value.trim();
  if (!name) throw invalidInput('name', '--name must not be empty');
  if (name.length > MAX_NAME_LENGTH) throw invalidInput('name', `--name may be at most ${MAX_NAME_LENGTH} characters`);
  return name;
};

/** `--rate-limit` in its written form, or a one-line OperatorError. */
export const parseRateLimitOption = (value: string): string => {
  try {
    return formatRateLimit(parseRateLimit(value));
  } catch (error) {
    if (error instanceof InvalidRateLimitError) throw invalidInput('rate_limit', `--rate-limit: ${error.message}`);
    throw error;
  }
};

export interface KeyListing extends ApiKeyRecord {
  /** Time of the key's newest call counted in the rollups, if any. */
  last_used_at: string | null;
  status: KeyState;
}

/** The key's state (shared/domain/key-state.ts): the same answer the API gives. */
export const keyStatus = (record: ApiKeyRecord, now = new Date()): KeyState => keyState(record, now);

/** Listings of keys, with "last used" from the rollups' last-used items (lib/operator/usage-rollups.ts). */
const withLastUsed = (records: ApiKeyRecord[], lastUsed: Map<string, string>, now: Date): KeyListing[] =>
  records.map((record) => ({
    ...record,
    status: keyStatus(record, now),
    last_used_at: lastUsed.get(record.key_id) ?? null,
  }));

/**
 * The branch's keys, newest first, and when each was last used: three independent reads (the
 * branch, its keys, its last-used rollup items), one request each, made at once.
 */
const readListing = async (ctx: OperatorContext, branchId: string) => {
  const [branch, records, lastUsed] = await Promise.allSettled([
    requireBranch(ctx, branchId),
    ctx.keys.listByBranch(branchId),
    ctx.rollups.lastUsed(branchId),
  ]);
  // The branch check's refusal first, whichever read failed first: the same answer every time.
  for (const read of [branch, records, lastUsed]) if (read.status === 'rejected') throw read.reason;
  return {
    records: (records as PromiseFulfilledResult<ApiKeyRecord[]>).value,
    lastUsed: (lastUsed as PromiseFulfilledResult<Map<string, string>>).value,
  };
};

export const listKeys = async (ctx: OperatorContext, branchId: string, now = new Date()): Promise<KeyListing[]> => {
  const { records, lastUsed } = await readListing(ctx, branchId);
  return withLastUsed(records, lastUsed, now);
};

/** One page of a branch's keys, newest first, with how many there are. */
export const listKeyPage = async (
  ctx: OperatorContext,
  branchId: string,
  page: { offset: number; limit: number },
  now = new Date(),
): Promise<{ keys: KeyListing[]; total: number }> => {
  const { records, lastUsed } = await readListing(ctx, branchId);
  return {
    keys: withLastUsed(records.slice(page.offset, page.offset + page.limit), lastUsed, now),
    total: records.length,
  };
};

export const unknownKey = (branchId: string, keyId: string) =>
  new OperatorError(`Unknown key id "${keyId}" for branch "${branchId}"`, 'unknown_key', 'key_id');

export interface KeyOfBranch {
  branchId: string;
  keyId: string;
}

/**
 * The key, when it belongs to the branch. Every operation on one key goes through this: a key of
 * another branch gets the same answer as an id that does not exist, so a branch's settings page
 * learns nothing about other branches' keys.
 * @throws OperatorError `Unknown key id "…" for branch "…"`
 */
export const requireKeyOfBranch = async (
  ctx: OperatorContext,
  branchId: string,
  keyId: string,
): Promise<ApiKeyRecord> => {
  await requireBranch(ctx, branchId);
  const key = await ctx.keys.getById(keyId);
  if (!key || key.branch_id !== branchId) throw unknownKey(branchId, keyId);
  return key;
};

export interface RevokedKey extends ApiKeyRecord {
  revoked_at: string;
  /** True when the key had been revoked before this call (which then changed nothing). */
  already_revoked: boolean;
}

/** Revokes a key of the branch from the next request on; revoking a revoked key changes nothing. */
export const revokeKey = async (ctx: OperatorContext, { branchId, keyId }: KeyOfBranch): Promise<RevokedKey> => {
  const key = await requireKeyOfBranch(ctx, branchId, keyId);
  if (key.revoked_at) return { ...key, revoked_at: key.revoked_at, already_revoked: true };
  try {
    const revoked = await ctx.keys.revoke(keyId, new Date(), await ctx.actor());
    return { ...revoked, revoked_at: revoked.revoked_at!, already_revoked: false };
  } catch (error) {
    // Deleted between the two reads: as unknown as any other id.
    if (error instanceof KeyNotFoundError) throw unknownKey(branchId, keyId);
    throw error;
  }
};

export interface UsageRequest {
  branchId: string;
  keyId?: string;
  since?: string;
  /** How many records, newest first. @default 50 */
  limit?: number;
}

export interface UsageSummary {
  /** Every call in the period (`--since` to now; all kept records without it), not only those shown. */
  count: number;
  by_status: Record<string, number>;
  p50_ms: number | null;
  p95_ms: number | null;
  /** False when the period held more than MAX_SUMMARY_CALLS calls: the figures cover the newest ones. */
  complete: boolean;
}

/** Nearest-rank percentile of sorted values. */
const percentile = (sorted: number[], p: number): number | null =>
  sorted.length === 0 ? null : (sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? null);

export const summarize = (
  records: readonly Pick<UsageRecord, 'status' | 'response_time_ms'>[],
  complete = true,
): UsageSummary => {
  const byStatus: Record<string, number> = {};
  for (const record of records) byStatus[record.status] = (byStatus[record.status] ?? 0) + 1;
  const times = records.map((record) => record.response_time_ms).sort((a, b) => a - b);
  return {
    count: records.length,
    by_status: byStatus,
    p50_ms: percentile(times, 50),
    p95_ms: percentile(times, 95),
    complete,
  };
};

export const MAX_USAGE_LIMIT = 10_000;
/** Most calls the summary of `usage` reads (status and time only): about 100 pages of the usage table. */
export const MAX_SUMMARY_CALLS = 200_000;

/**
 * The newest usage records of a branch (or one of its keys), and a summary of every call in the
 * period, not only of the records shown (bounded by `maxSummaryCalls`).
 */
export const readUsage = async (
  ctx: OperatorContext,
  request: UsageRequest,
  maxSummaryCalls: number = MAX_SUMMARY_CALLS,
) => {
  const limit = request.limit ?? 50;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_USAGE_LIMIT) {
    throw invalidInput('limit', `--limit must be a whole number from 1 to ${MAX_USAGE_LIMIT}`);
  }
  const since = request.since === undefined ? undefined : parseIsoDate(request.since, '--since');
  await requireBranch(ctx, request.branchId);
  if (request.keyId !== undefined) await requireKeyOfBranch(ctx, request.branchId, request.keyId);
  const scope = {
    branchId: request.branchId,
    ...(request.keyId ? { keyId: request.keyId } : {}),
    ...(since ? { since } : {}),
  };
  const records: UsageRecord[] = [];
  let position: string | undefined;
  do {
    const page = await ctx.usage.query({
      ...scope,
      limit: Math.min(1000, limit - records.length),
      ...(position ? { position } : {}),
    });
    records.push(...page.records);
    position = page.nextPosition;
  } while (position && records.length < limit);
  const stats = await ctx.usage.callStats(scope, maxSummaryCalls);
  return { records, summary: summarize(stats.calls, stats.complete) };
};

const describeIssues = (issues: z.core.$ZodIssue[]): string =>
  issues.map((issue) => `${issue.path.length ? issue.path.join('.') : '(file)'}: ${issue.message}`).join('; ');

/** Reads and validates a whole seed file; nothing is written unless every entry is valid. */
export const readSeedFile = async (file: string): Promise<SeedFile> => {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new OperatorError(`Cannot read seed file ${file}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new OperatorError(`Seed file ${file} is not valid JSON: ${(error as Error).message}`);
  }
  const parsed = SeedFileSchema.safeParse(json);
  if (!parsed.success) throw new OperatorError(`Seed file ${file} is invalid: ${describeIssues(parsed.error.issues)}`);
  const duplicates: string[] = [];
  const seen = new Set<string>();
  const once = (id: string) => (seen.has(id) ? duplicates.push(id) : seen.add(id));
  for (const branch of parsed.data.branches) {
    once(`branch ${branch.id}`);
    branch.members.forEach((m) => once(`member ${branch.id}/${m.id}`));
    branch.payment_providers.forEach((p) => once(`payment provider ${branch.id}/${p.id}`));
  }
  if (duplicates.length > 0) throw new OperatorError(`Seed file ${file} repeats ids: ${duplicates.join(', ')}`);
  return parsed.data;
};

/** Loads a seed file (idempotent: re-running the same file leaves the same data). */
export const seed = async (ctx: OperatorContext, file: string, onProgress?: (done: number, total: number) => void) => {
  const data = await readSeedFile(file);
  for (const [index, branch] of data.branches.entries()) {
    await ctx.branchData.putBranch(branch);
    onProgress?.(index + 1, data.branches.length);
  }
  return {
    branch_ids: data.branches.map((branch) => branch.id),
    branches: data.branches.length,
    members: data.branches.reduce((n, b) => n + b.members.length, 0),
    payment_providers: data.branches.reduce((n, b) => n + b.payment_providers.length, 0),
  };
};
