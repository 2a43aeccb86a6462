/**
 * Editing, disabling and enabling a key, and reading the key activity log (docs/decisions.md
 * "Key lifecycle", "Key activity"). The CLI (`keys update|disable|enable|activity`) and the
 * settings console call these; every input is checked before anything is written, and each
 * action records who did it.
 */
import {
  KeyActionRefusedError,
  KeyChangedError,
  KeyNotFoundError,
  type ApiKeyRecord,
  type KeySettingsChange,
} from '../../shared/domain/key-record';
import type { KeyActionResult, KeyRef } from '../../shared/data/repositories/keys';
import type { ActivityEntry } from '../../shared/data/repositories/activity';
import type { KeyState } from '../../shared/domain/key-state';
import type { OperatorContext } from './context';
import { invalidInput, OperatorError } from './errors';
import {
  parseAllowIps,
  parseFutureExpiry,
  parseName,
  parseRateLimitOption,
  parseScopes,
  requireBranch,
  requireKeyOfBranch,
  unknownKey,
  type KeyOfBranch,
} from './operations';

export interface UpdateKeyRequest extends KeyOfBranch {
  name?: string;
  /** Comma-separated scopes. */
  scopes?: string;
  /** `N/s`, `N/min` or `N/h`; `null`: back to the deployment's default. */
  rateLimit?: string | null;
  /** Comma-separated addresses or CIDR blocks; `null`: usable from anywhere. */
  allowIps?: string | null;
  /** ISO 8601, in the future; `null`: never expires. */
  expires?: string | null;
  now?: Date;
}

/** What an action did: the key afterwards, and false when nothing needed changing. */
export interface KeyActionOutcome {
  key: ApiKeyRecord;
  changed: boolean;
}

/** Checks an update's inputs and turns them into the settings to change; writes nothing. */
export const parseKeyChange = (request: UpdateKeyRequest, now: Date): KeySettingsChange => {
  const change: KeySettingsChange = {
    ...(request.name !== undefined ? { name: parseName(request.name) } : {}),
    ...(request.scopes !== undefined ? { scopes: parseScopes(request.scopes) } : {}),
    ...(request.rateLimit !== undefined
      ? { rate_limit: request.rateLimit === null ? null : parseRateLimitOption(request.rateLimit) }
      : {}),
    ...(request.allowIps !== undefined
      ? { allowed_ips: request.allowIps === null ? null : parseAllowIps(request.allowIps) }
      : {}),
    ...(request.expires !== undefined
      ? { expires_at: request.expires === null ? null : parseFutureExpiry(request.expires, now).toISOString() }
      : {}),
  };
  if (Object.keys(change).length === 0) {
    throw invalidInput('key', 'Nothing to change: give --name, --scopes, --rate-limit, --allow-ip or --expires');
  }
  return change;
};

const REFUSED_BECAUSE: Record<KeyState, string> = {
  revoked: 'it is revoked',
  expired: 'it has expired',
  grace: 'it was rolled',
  disabled: 'it is disabled',
  active: 'it is active',
};

/** Runs a repository action on a key of the branch, with repository errors turned into operator errors. */
const act = async (
  ctx: OperatorContext,
  { branchId, keyId }: KeyOfBranch,
  now: Date,
  run: (ref: KeyRef) => Promise<KeyActionResult>,
): Promise<KeyActionOutcome> => {
  await requireBranch(ctx, branchId);
  try {
    const { record, changed } = await run({ keyId, branchId, now, actor: await ctx.actor() });
    return { key: record, changed };
  } catch (error) {
    if (error instanceof KeyNotFoundError) throw unknownKey(branchId, keyId);
    if (error instanceof KeyActionRefusedError) {
      const next = error.rolledTo ? `; it was rolled to ${error.rolledTo}, act on that key instead` : '';
      // The action's past participle reads as the verb, but for an edit.
      const verb = error.action === 'updated' ? 'changed' : error.action;
      throw new OperatorError(
        `Key ${keyId} cannot be ${verb}: ${REFUSED_BECAUSE[error.state]}${next}`,
        'key_not_changeable',
      );
    }
    if (error instanceof KeyChangedError) throw new OperatorError(error.message, 'conflict');
    throw error;
  }
};

/** Changes a live key's name, scopes, rate limit, allowlist or expiry; the change takes effect on its next call. */
export const updateKey = async (ctx: OperatorContext, request: UpdateKeyRequest): Promise<KeyActionOutcome> => {
  const now = request.now ?? new Date();
  const change = parseKeyChange(request, now);
  return act(ctx, request, now, (ref) => ctx.keys.update(ref, change));
};

/** Disables a key: 401 disabled_api_key from its next call until it is enabled. Idempotent. */
export const disableKey = async (ctx: OperatorContext, request: KeyOfBranch & { now?: Date }) =>
  act(ctx, request, request.now ?? new Date(), (ref) => ctx.keys.disable(ref));

/** Enables a disabled key again; an enabled key is left as it is. */
export const enableKey = async (ctx: OperatorContext, request: KeyOfBranch & { now?: Date }) =>
  act(ctx, request, request.now ?? new Date(), (ref) => ctx.keys.enable(ref));

export interface ActivityRequest {
  branchId: string;
  /** Only this key's actions. */
  keyId?: string;
  /** How many entries, newest first. @default 50 */
  limit?: number;
}

/** Most entries one activity read returns. */
export const MAX_ACTIVITY_LIMIT = 1000;

/**
 * The newest key actions of a branch (or one of its keys). Entries a failed copy left on key
 * items are copied first, so the log never disagrees with the keys (docs/decisions.md "Key activity").
 */
export const listActivity = async (ctx: OperatorContext, request: ActivityRequest): Promise<ActivityEntry[]> => {
  const limit = request.limit ?? 50;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_ACTIVITY_LIMIT) {
    throw invalidInput('limit', `--limit must be a whole number from 1 to ${MAX_ACTIVITY_LIMIT}`);
  }
  await requireBranch(ctx, request.branchId);
  if (request.keyId !== undefined) await requireKeyOfBranch(ctx, request.branchId, request.keyId);
  await ctx.keys.flushActivity(request.branchId);
  return ctx.activity.list({
    branchId: request.branchId,
    limit,
    ...(request.keyId !== undefined ? { keyId: request.keyId } : {}),
  });
};
