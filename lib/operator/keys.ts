/**
 * Every key action of a branch's "API keys" settings page (docs/decisions.md "Key lifecycle",
 * "Key activity"): create, list, update, disable, enable, roll, revoke, audit, and the activity
 * log. The CLI and the console call these with typed values (lib/operator/input.ts parses text);
 * every value is checked before anything is written, each action records who did it, and a
 * refusal is an OperatorError naming its code and field.
 */
import { canonicalAllowlist, InvalidCidrError } from '../../shared/domain/cidr';
import { formatRateLimit, MAX_RATE_LIMIT, type RateLimit } from '../../shared/domain/rate-limit';
import {
  KeyActionRefusedError,
  KeyChangedError,
  KeyNotFoundError,
  KeyNotRollableError,
  type ApiKeyRecord,
  type KeySettingsChange,
} from '../../shared/domain/key-record';
import type { KeyActionResult, KeyRef, PendingEntry } from '../../shared/data/repositories/keys';
import { EVENTS_NOT_SENT, type ActivityEntry, type KeyAction } from '../../shared/domain/key-activity';
import type { ActivityPage } from '../../shared/data/repositories/activity';
import { SCOPES, type Scope } from '../../shared/domain/schemas';
import type { KeyUse } from '../../shared/domain/rollups';
import { keyState, type KeyState } from '../../shared/domain/key-state';
import { sendExpiringEvents } from '../../shared/lambda/key-expiry';
import type { OperatorContext } from './context';
import { dataStoreFailureMessage } from './data-store-failure';
import { checkLimit, invalidInput, namingField, OperatorError } from './errors';
import { auditOf, lastUseOf, type LastRefused } from './key-audit';
import { isWholeValue, keyIdOfValue, matchesKey, type KeyFilter } from './key-search';
import { DEFAULT_GRACE_MS, DURATION_UNITS, MAX_ACTIVITY_LIMIT, MAX_GRACE_MS, MAX_NAME_LENGTH } from './limits';

/** A key's settings, as a key is created with them or changed to them. */
export interface KeySettings {
  /** Trimmed; not empty, at most MAX_NAME_LENGTH characters. */
  name?: string;
  /** At least one. */
  scopes?: Scope[];
  /** In the future; `null` (on update): never expires. */
  expiresAt?: Date | null;
  /** IPv4/IPv6 addresses or CIDR blocks the key may be used from; `null` (on update): anywhere. */
  allowedIps?: string[] | null;
  /** `null` (on update): back to the deployment's default. */
  rateLimit?: RateLimit | null;
}

export interface KeyOfBranch {
  branchId: string;
  keyId: string;
}

export interface KeyListing extends ApiKeyRecord {
  /** Time of the key's newest accepted call counted in the rollups, if any. */
  last_used_at: string | null;
  /** Its newest refused call (revoked, expired, disabled, over its limit, IP or scope), if any. */
  last_refused: LastRefused | null;
  status: KeyState;
}

/**
 * A key action's entry not finished yet: the action has happened, and its entry waits on the key,
 * in order, for the key actions finisher or the key's next action (docs/decisions.md "Key events").
 */
export interface PendingActivity {
  key_id: string;
  action: KeyAction;
  activity_id: string;
  /** Written to the activity log. */
  copied: boolean;
  /** Its key event sent. */
  sent: boolean;
  /** Why not, in words: the DynamoDB failure named, the event unsent, or an earlier one of the key unsent. */
  reason: string;
  /** Events of the key's older entries that the bound folded into this one: never sent. */
  events_not_sent?: number;
}

/** The entries an action left waiting, if any: `{ pending }` to spread into its outcome. */
const pendingOf = (ctx: OperatorContext, entries: readonly PendingEntry[]): { pending?: PendingActivity[] } => {
  if (entries.length === 0) return {};
  const reasonOf = ({ copied, copyError, sent, heldBack }: PendingEntry): string => {
    const reasons: string[] = [];
    if (!copied) reasons.push(copyError === undefined ? 'no activity table' : dataStoreFailureMessage(copyError, ctx));
    if (heldBack) reasons.push("an earlier event of this key is not sent yet, and a key's events go in order");
    else if (!sent) reasons.push('its destination did not take it: see "Key event not sent" in the log');
    return reasons.join('; ');
  };
  return {
    pending: entries.map((pending) => {
      const folded = pending.entry.details?.[EVENTS_NOT_SENT];
      return {
        key_id: pending.entry.key_id,
        action: pending.entry.action,
        activity_id: pending.entry.activity_id,
        copied: pending.copied,
        sent: pending.sent,
        reason: reasonOf(pending),
        ...(folded === undefined ? {} : { events_not_sent: Number(folded) }),
      };
    }),
  };
};

/** What a pending entry means for the operator, one sentence (the CLI's warning, the console's notice). */
export const pendingNotice = ({ key_id, action, copied, sent, reason, events_not_sent }: PendingActivity): string => {
  const missing = [copied ? '' : 'its activity entry is not written', sent ? '' : 'its key event is not sent']
    .filter(Boolean)
    .join(' and ');
  const folded = events_not_sent
    ? ` (${events_not_sent} older events of this key were folded into it, never sent)`
    : '';
  return (
    `key ${key_id} ${action}, but ${missing} yet (${reason})${folded}: it stays on the key, in order, and is ` +
    'finished by the key actions finisher or the next action on this key'
  );
};

/** The branch exists, and so does its key `keyId` when one is named (`requireKeyOfBranch`). */
export const requireBranch = async (ctx: OperatorContext, branchId: string, keyId?: string): Promise<void> => {
  if (keyId !== undefined) await requireKeyOfBranch(ctx, branchId, keyId);
  else if (!(await ctx.branchData.getBranch(branchId)))
    throw new OperatorError(`Unknown branch "${branchId}"`, 'unknown_branch', 'branch');
};

export const unknownKey = (branchId: string, keyId: string) =>
  new OperatorError(`Unknown key id "${keyId}" for branch "${branchId}"`, 'unknown_key', 'key_id');

/**
 * The key, when it belongs to the branch. Every operation on one key goes through this: a key of
 * another branch gets the same answer as an id that does not exist, so a branch's settings page
 * learns nothing about other branches' keys.
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

const checkName = (value: string): string => {
  const name = value.trim();
  if (!name) throw invalidInput('name', ' must not be empty');
  if (name.length > MAX_NAME_LENGTH) throw invalidInput('name', ` may be at most ${MAX_NAME_LENGTH} characters`);
  return name;
};

const checkScopes = (scopes: readonly Scope[]): Scope[] => {
  if (scopes.length === 0) throw invalidInput('scopes', ` needs at least one of: ${SCOPES.join(', ')}`);
  return [...new Set(scopes)];
};

const checkExpiry = (expiresAt: Date, now: Date): Date => {
  if (Number.isNaN(expiresAt.getTime())) throw invalidInput('expires_at', ' must be a valid time');
  // A key with this expiry would be expired already (keyState is the one expiry-versus-clock rule).
  if (keyState({ expires_at: expiresAt.toISOString() }, now) === 'expired') {
    throw invalidInput('expires_at', ` must be in the future; got ${expiresAt.toISOString()}`);
  }
  return expiresAt;
};

/** Canonical CIDR entries without repeats (docs/decisions.md "Key lifecycle"). */
const checkAllowedIps = namingField('allowed_ips', canonicalAllowlist, InvalidCidrError);

const checkRateLimit = (rateLimit: RateLimit): string => {
  if (!Number.isInteger(rateLimit.limit) || rateLimit.limit < 1 || rateLimit.limit > MAX_RATE_LIMIT) {
    throw invalidInput('rate_limit', `: Rate limit must allow from 1 to ${MAX_RATE_LIMIT} calls per window`);
  }
  return formatRateLimit(rateLimit);
};

/** The settings checked, as the repository stores them; writes nothing. */
const settingsChange = (settings: KeySettings, now: Date): KeySettingsChange => {
  const { name, scopes, expiresAt, allowedIps, rateLimit } = settings;
  return {
    ...(name !== undefined ? { name: checkName(name) } : {}),
    ...(scopes !== undefined ? { scopes: checkScopes(scopes) } : {}),
    ...(expiresAt !== undefined
      ? { expires_at: expiresAt === null ? null : checkExpiry(expiresAt, now).toISOString() }
      : {}),
    ...(allowedIps !== undefined ? { allowed_ips: allowedIps === null ? null : checkAllowedIps(allowedIps) } : {}),
    ...(rateLimit !== undefined ? { rate_limit: rateLimit === null ? null : checkRateLimit(rateLimit) } : {}),
  };
};

/** A key made without a name is `API key N`: the first N from the branch's key count on that no key has. */
const defaultName = (existing: readonly ApiKeyRecord[]): string => {
  const taken = new Set(existing.map((key) => key.name));
  let number = existing.length + 1;
  while (taken.has(`API key ${number}`)) number += 1;
  return `API key ${number}`;
};

/** Creates a key. The returned `key`, its value, is the only time it is ever available: never stored. */
export const createKey = async (
  ctx: OperatorContext,
  request: KeySettings & { branchId: string; scopes: Scope[]; now?: Date },
) => {
  const now = request.now ?? new Date();
  const change = settingsChange(request, now);
  await requireBranch(ctx, request.branchId);
  const name = change.name ?? defaultName(await ctx.keys.listByBranch(request.branchId));
  const { key, record, pending } = await ctx.keys.create({
    branchId: request.branchId,
    scopes: change.scopes!,
    name,
    now,
    actor: await ctx.actor(),
    allowedIps: change.allowed_ips ?? undefined,
    expiresAt: change.expires_at ? new Date(change.expires_at) : undefined,
    rateLimit: change.rate_limit ?? undefined,
  });
  return { key, record, ...pendingOf(ctx, pending) };
};

/**
 * The branch's keys that `filter` keeps, newest first, and when each was last used and last
 * refused (the rollups' last-use items): independent reads, made at once.
 */
export const listKeys = async (
  ctx: OperatorContext,
  branchId: string,
  now = new Date(),
  filter: KeyFilter = {},
): Promise<KeyListing[]> => {
  const whole = [filter.search, filter.valuePrefix].find((text) => text !== undefined && isWholeValue(text));
  const [branch, records, lastUse, byValue] = await Promise.allSettled([
    requireBranch(ctx, branchId),
    ctx.keys.listByBranch(branchId),
    ctx.rollups.lastUsed(branchId),
    // A whole value matches its own key only (or none): "no key has this value" is an answer too.
    whole === undefined ? null : keyIdOfValue(ctx, branchId, whole).then((id) => id ?? ''),
  ]);
  // The branch check's refusal first, whichever read failed first: the same answer every time.
  for (const read of [branch, records, lastUse, byValue]) if (read.status === 'rejected') throw read.reason;
  const uses = (lastUse as PromiseFulfilledResult<Map<string, KeyUse>>).value;
  const matched = (byValue as PromiseFulfilledResult<string | null>).value;
  return (records as PromiseFulfilledResult<ApiKeyRecord[]>).value
    .map((record) => ({ ...record, status: keyState(record, now), ...lastUseOf(record, uses.get(record.key_id)) }))
    .filter((key) => matchesKey(key, filter, matched));
};

const REFUSED_BECAUSE: Record<KeyState, string> = {
  revoked: 'it is revoked',
  expired: 'it has expired',
  grace: 'it was rolled',
  disabled: 'it is disabled',
  active: 'it is active',
};

const ROLL_REFUSALS: Record<KeyNotRollableError['reason'], string> = {
  revoked: 'it is revoked',
  expired: 'it has expired',
  rolled: 'it was already rolled',
  disabled: 'it is disabled; enable it first',
};

/** A repository refusal as the operator error that names it; any other error as it is. */
const refusal = (error: unknown, { branchId, keyId }: KeyOfBranch): unknown => {
  if (error instanceof KeyNotFoundError) return unknownKey(branchId, keyId);
  if (error instanceof KeyNotRollableError) {
    const next = error.rolledTo ? ` to ${error.rolledTo}; roll that key instead` : '';
    return new OperatorError(
      `Key ${keyId} cannot be rolled: ${ROLL_REFUSALS[error.reason]}${next}`,
      'key_not_changeable',
    );
  }
  if (error instanceof KeyActionRefusedError) {
    const next = error.rolledTo ? `; it was rolled to ${error.rolledTo}, act on that key instead` : '';
    // The action's past participle reads as the verb, but for an edit.
    const verb = error.action === 'updated' ? 'changed' : error.action;
    return new OperatorError(
      `Key ${keyId} cannot be ${verb}: ${REFUSED_BECAUSE[error.state]}${next}`,
      'key_not_changeable',
    );
  }
  return error instanceof KeyChangedError ? new OperatorError(error.message, 'conflict') : error;
};

type KeyChange = KeyOfBranch & { now?: Date };

/** Runs a repository action on a key of the branch, with its refusals as operator errors. */
const act = async <T>(ctx: OperatorContext, request: KeyChange, run: (ref: KeyRef) => Promise<T>): Promise<T> => {
  const { branchId, keyId, now = new Date() } = request;
  await requireBranch(ctx, branchId);
  try {
    return await run({ branchId, keyId, now, actor: await ctx.actor() });
  } catch (error) {
    throw refusal(error, request);
  }
};

/** An action on the key in place: the key afterwards, false when nothing needed changing, its pending entry. */
const change = async (ctx: OperatorContext, request: KeyChange, run: (ref: KeyRef) => Promise<KeyActionResult>) => {
  const { record, changed, pending } = await act(ctx, request, run);
  return { key: record, changed, ...pendingOf(ctx, pending) };
};

/** Changes a live key's name, scopes, rate limit, allowlist or expiry; the change takes effect on its next call. */
export const updateKey = async (ctx: OperatorContext, request: KeyChange & KeySettings) => {
  const settings = settingsChange(request, request.now ?? new Date());
  if (Object.keys(settings).length === 0) {
    throw new OperatorError(
      'Nothing to change: give a name, scopes, rate limit, allowed IPs or expiry',
      'invalid_input',
      'key',
    );
  }
  return change(ctx, request, (ref) => ctx.keys.update(ref, settings));
};

/** Disables a key: 401 disabled_api_key from its next call until it is enabled. Idempotent. */
export const disableKey = async (ctx: OperatorContext, request: KeyChange) =>
  change(ctx, request, (ref) => ctx.keys.disable(ref));

/** Enables a disabled key again; an enabled key is left as it is. */
export const enableKey = async (ctx: OperatorContext, request: KeyChange) =>
  change(ctx, request, (ref) => ctx.keys.enable(ref));

export interface RevokedKey extends ApiKeyRecord {
  revoked_at: string;
  /** True when the key had been revoked before this call (which then changed nothing). */
  already_revoked: boolean;
  pending?: PendingActivity[];
}

/** Revokes a key of the branch from the next request on; revoking a revoked key changes nothing. */
export const revokeKey = async (ctx: OperatorContext, { branchId, keyId }: KeyOfBranch): Promise<RevokedKey> => {
  const key = await requireKeyOfBranch(ctx, branchId, keyId);
  if (key.revoked_at) return { ...key, revoked_at: key.revoked_at, already_revoked: true };
  try {
    const { record, pending } = await ctx.keys.revoke(keyId, new Date(), await ctx.actor());
    return { ...record, revoked_at: record.revoked_at!, already_revoked: false, ...pendingOf(ctx, pending) };
  } catch (error) {
    // Deleted between the two reads: as unknown as any other id.
    if (error instanceof KeyNotFoundError) throw unknownKey(branchId, keyId);
    throw error;
  }
};

/**
 * Rolls a key of the branch: a new key with its settings (`key`, its value, shown once and never
 * stored), the old one (`previous`) ending after the grace period, 0 to MAX_GRACE_MS.
 */
export const rollKey = async (ctx: OperatorContext, request: KeyChange & { graceMs?: number }) => {
  const graceMs = request.graceMs ?? DEFAULT_GRACE_MS;
  if (!Number.isInteger(graceMs) || graceMs < 0 || graceMs > MAX_GRACE_MS) {
    throw invalidInput('grace', ` must be from 0 to ${MAX_GRACE_MS / DURATION_UNITS.d} days`);
  }
  const { pending, ...rolled } = await act(ctx, request, (ref) => ctx.keys.roll({ ...ref, graceMs }));
  return { ...rolled, ...pendingOf(ctx, pending) };
};

/**
 * Audits every active key of a branch (revoked and expired keys no longer open anything): what
 * could be tightened, retired or renewed. Locally it also sends the "Key Expiring" events the
 * daily function sends deployed (once per key and expiry).
 */
export const auditKeys = async (ctx: OperatorContext, request: { branchId: string; now?: Date }) => {
  const now = request.now ?? new Date();
  const listed = await listKeys(ctx, request.branchId, now);
  await sendExpiringEvents({ claims: ctx.expiryClaims, keyEvents: ctx.keyEvents, candidates: listed, now });
  const keys = await auditOf(ctx, listed, now);
  return { branch_id: request.branchId, generated_at: now.toISOString(), keys };
};

export interface ActivityRequest {
  branchId: string;
  /** Only this key's actions. */
  keyId?: string;
  /** How many entries, newest first. @default 50 */
  limit?: number;
  /** The entries older than this position (a page's `older`). */
  before?: string;
  /** The entries newer than this position (a page's `newer`). */
  after?: string;
}

/** A position is an entry's place in the log: `<time>#<key id>#<version>`. */
const ACTIVITY_POSITION = /^\d{4}-\d{2}-\d{2}T[\d:.]+Z#[^\s#]+#\d+$/;

/**
 * A page of the key actions of a branch (or one of its keys), newest first, with the positions
 * of the pages beside it. Entries a failed copy left on key items are copied first, so the log
 * never disagrees with the keys (docs/decisions.md "Key activity").
 */
export const listActivityPage = async (ctx: OperatorContext, request: ActivityRequest): Promise<ActivityPage> => {
  const limit = checkLimit(request.limit ?? 50, MAX_ACTIVITY_LIMIT);
  for (const field of ['before', 'after'] as const) {
    const position = request[field];
    if (position !== undefined && (position.length > 300 || !ACTIVITY_POSITION.test(position)))
      throw invalidInput('position', ' is not a position in the activity log');
  }
  if (request.before !== undefined && request.after !== undefined)
    throw invalidInput('position', ' is either before or after, not both');
  await requireBranch(ctx, request.branchId, request.keyId);
  await ctx.keys.outbox.finishBranch(request.branchId);
  return ctx.activity.page({ ...request, limit });
};

/** The newest key actions of a branch (or one of its keys): a page's entries. */
export const listActivity = async (ctx: OperatorContext, request: ActivityRequest): Promise<ActivityEntry[]> =>
  (await listActivityPage(ctx, request)).entries;
