/**
 * The operations behind the branch's settings pages for API keys and API usage: the library a
 * settings page would call, and what the `branch-api` CLI runs. Every input is checked here, so
 * a bad one is an OperatorError with a one-line message, never a half-done write.
 */
import { readFile } from 'node:fs/promises';
import type { z } from 'zod';
import { formatRateLimit, InvalidRateLimitError, parseRateLimit } from '../../shared/rate-limit';
import { KeyNotFoundError, type ApiKeyRecord } from '../../shared/repositories/keys';
import type { UsageRecord } from '../../shared/repositories/usage';
import { SCOPES, ScopeSchema, SeedFileSchema, type Scope, type SeedFile } from '../../shared/schemas';
import type { OperatorContext } from './context';

export class OperatorError extends Error {
  override name = 'OperatorError';
}

const ISO_8601 = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/** Parses an ISO 8601 date or date-time, in UTC unless it names an offset (a date alone is midnight UTC). */
export const parseIsoDate = (value: string, what: string): Date => {
  const match = ISO_8601.exec(value);
  const date = new Date(match && match[1] && !match[4] ? `${value}Z` : value);
  // Date rolls 2027-02-30 over to March; a real date keeps its calendar day in UTC.
  const valid = match !== null && !Number.isNaN(date.getTime());
  if (!valid || (!match[4] && date.toISOString().slice(0, 10) !== value.slice(0, 10))) {
    throw new OperatorError(`${what} must be an ISO 8601 date or date-time, e.g. 2027-01-31T23:59:59Z; got "${value}"`);
  }
  return date;
};

export const parseScopes = (value: string): Scope[] => {
  const scopes = value
    .split(',')
    .map((scope) => scope.trim())
    .filter(Boolean);
  if (scopes.length === 0) throw new OperatorError(`--scopes needs at least one of: ${SCOPES.join(', ')}`);
  const unknown = scopes.filter((scope) => !ScopeSchema.safeParse(scope).success);
  if (unknown.length > 0) {
    throw new OperatorError(`Unknown scope ${unknown.map((s) => `"${s}"`).join(', ')}; allowed: ${SCOPES.join(', ')}`);
  }
  return [...new Set(scopes as Scope[])];
};

const requireBranch = async (ctx: OperatorContext, branchId: string): Promise<void> => {
  if (!(await ctx.branchData.getBranch(branchId))) throw new OperatorError(`Unknown branch "${branchId}"`);
};

export interface CreateKeyRequest {
  branchId: string;
  /** Comma-separated scopes, e.g. `read,team:read`. */
  scopes: string;
  /** ISO 8601; must be in the future. */
  expires?: string;
  name?: string;
  /** `N/s`, `N/min` or `N/h`; absent: the deployment's default. */
  rateLimit?: string;
  now?: Date;
}

/** Creates a key. The returned `key` is the only time its value is ever available. */
export const createKey = async (ctx: OperatorContext, request: CreateKeyRequest) => {
  const now = request.now ?? new Date();
  const scopes = parseScopes(request.scopes);
  const expiresAt = request.expires === undefined ? undefined : parseIsoDate(request.expires, '--expires');
  if (expiresAt && expiresAt.getTime() <= now.getTime()) {
    throw new OperatorError(`--expires must be in the future; got ${expiresAt.toISOString()}`);
  }
  if (request.name !== undefined && !request.name.trim()) throw new OperatorError('--name must not be empty');
  const rateLimit = request.rateLimit === undefined ? undefined : parseRateLimitOption(request.rateLimit);
  await requireBranch(ctx, request.branchId);
  return ctx.keys.create({
    branchId: request.branchId,
    scopes,
    now,
    ...(expiresAt ? { expiresAt } : {}),
    ...(request.name ? { name: request.name.trim() } : {}),
    ...(rateLimit ? { rateLimit } : {}),
  });
};

/** `--rate-limit` in its written form, or a one-line OperatorError. */
export const parseRateLimitOption = (value: string): string => {
  try {
    return formatRateLimit(parseRateLimit(value));
  } catch (error) {
    if (error instanceof InvalidRateLimitError) throw new OperatorError(`--rate-limit: ${error.message}`);
    throw error;
  }
};

export interface KeyListing extends ApiKeyRecord {
  /** Timestamp of the key's newest usage record, if any. */
  last_used_at: string | null;
  status: 'active' | 'expired' | 'revoked';
}

export const keyStatus = (record: ApiKeyRecord, now = new Date()): KeyListing['status'] => {
  if (record.revoked_at) return 'revoked';
  if (record.expires_at && Date.parse(record.expires_at) <= now.getTime()) return 'expired';
  return 'active';
};

export const listKeys = async (ctx: OperatorContext, branchId: string, now = new Date()): Promise<KeyListing[]> => {
  await requireBranch(ctx, branchId);
  const records = await ctx.keys.listByBranch(branchId);
  return Promise.all(
    records.map(async (record) => ({
      ...record,
      status: keyStatus(record, now),
      last_used_at: (await ctx.usage.lastUsedAt(record.key_id)) ?? null,
    })),
  );
};

export const revokeKey = async (ctx: OperatorContext, keyId: string): Promise<ApiKeyRecord> => {
  try {
    return await ctx.keys.revoke(keyId);
  } catch (error) {
    if (error instanceof KeyNotFoundError) throw new OperatorError(`Unknown key id "${keyId}"`);
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
  count: number;
  by_status: Record<string, number>;
  p50_ms: number | null;
  p95_ms: number | null;
}

/** Nearest-rank percentile of sorted values. */
const percentile = (sorted: number[], p: number): number | null =>
  sorted.length === 0 ? null : (sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? null);

export const summarize = (records: UsageRecord[]): UsageSummary => {
  const byStatus: Record<string, number> = {};
  for (const record of records) byStatus[record.status] = (byStatus[record.status] ?? 0) + 1;
  const times = records.map((record) => record.response_time_ms).sort((a, b) => a - b);
  return { count: records.length, by_status: byStatus, p50_ms: percentile(times, 50), p95_ms: percentile(times, 95) };
};

export const MAX_USAGE_LIMIT = 10_000;

/** The newest usage records of a branch (or one of its keys), with a summary of them. */
export const readUsage = async (ctx: OperatorContext, request: UsageRequest) => {
  const limit = request.limit ?? 50;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_USAGE_LIMIT) {
    throw new OperatorError(`--limit must be a whole number from 1 to ${MAX_USAGE_LIMIT}`);
  }
  const since = request.since === undefined ? undefined : parseIsoDate(request.since, '--since');
  await requireBranch(ctx, request.branchId);
  if (request.keyId !== undefined) {
    const key = await ctx.keys.getById(request.keyId);
    if (!key || key.branch_id !== request.branchId) {
      throw new OperatorError(`Unknown key id "${request.keyId}" for branch "${request.branchId}"`);
    }
  }
  const records: UsageRecord[] = [];
  let position: string | undefined;
  do {
    const page = await ctx.usage.query({
      branchId: request.branchId,
      limit: Math.min(1000, limit - records.length),
      ...(request.keyId ? { keyId: request.keyId } : {}),
      ...(since ? { since } : {}),
      ...(position ? { position } : {}),
    });
    records.push(...page.records);
    position = page.nextPosition;
  } while (position && records.length < limit);
  return { records, summary: summarize(records) };
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
export const seed = async (ctx: OperatorContext, file: string) => {
  const data = await readSeedFile(file);
  for (const branch of data.branches) await ctx.branchData.putBranch(branch);
  return {
    branch_ids: data.branches.map((branch) => branch.id),
    branches: data.branches.length,
    members: data.branches.reduce((n, b) => n + b.members.length, 0),
    payment_providers: data.branches.reduce((n, b) => n + b.payment_providers.length, 0),
  };
};
