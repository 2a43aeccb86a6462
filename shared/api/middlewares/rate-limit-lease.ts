/**
 * Block leasing for large limits (docs/capacity.md "Per key"): one `ADD count B` grants this
 * container the block's units at or below the limit, admitted locally until spent. Every admitted
 * call is a unit of the counter at or below N, so at most N are admitted per window in all.
 */
import { tokensGranted } from '../../domain/rate-limit';

/** What the counter decided for one call: a fault (fail open), or admitted/refused with what is left. */
export type Outcome = { error: unknown } | { left: number; over: boolean; reached: boolean };

/** The exact path: one call counted, `count` the window's count with it. */
export const outcomeOfCount = (count: number, limit: number): Outcome => ({
  left: limit - count,
  over: count > limit,
  reached: count >= limit,
});

/** key_id → a value of one window; at most `max` keys, expired ones dropped first, else all. */
export const windowMemory = <T>(max: number, endsAtOf: (value: T) => number) => {
  const held = new Map<string, T>();
  return {
    get: (keyId: string) => held.get(keyId),
    forget: (keyId: string) => held.delete(keyId),
    get size() {
      return held.size;
    },
    remember: (keyId: string, value: T, at: number): void => {
      if (held.size >= max && !held.has(keyId)) {
        for (const [id, one] of held) if (endsAtOf(one) <= at) held.delete(id);
        if (held.size >= max) held.clear();
      }
      held.set(keyId, value);
    },
  };
};

interface Lease {
  /** Epoch milliseconds at which its window ends: a new window starts a new lease. */
  readonly endsAt: number;
  /** Calls this container may still admit from the blocks it took. */
  tokens: number;
  /** N − count, as the counter last answered this container. */
  counterLeft: number;
  /** The counter has reached N: once the tokens are spent the window is used up. */
  last: boolean;
  /** The block being taken; calls that find no token wait for it rather than take their own. */
  pending?: Promise<{ error: unknown } | undefined>;
}

export interface LeaseCall {
  keyId: string;
  limit: number;
  block: number;
  endsAt: number;
  /** Adds `by` to the window's counter; resolves to the count with it. */
  take: (by: number) => Promise<number>;
}

/** Spends one token; `remaining` is what the counter had left plus this container's lease. */
const spend = (lease: Lease): Outcome | undefined => {
  if (lease.tokens > 0) {
    lease.tokens -= 1;
    return { left: lease.counterLeft + lease.tokens, over: false, reached: lease.last && lease.tokens === 0 };
  }
  return lease.last ? { left: 0, over: true, reached: true } : undefined;
};

const refill = (lease: Lease, { limit, block, take }: LeaseCall): Promise<{ error: unknown } | undefined> => {
  lease.pending ??= take(block)
    .then(
      (count) => {
        lease.tokens += tokensGranted(limit, count, block);
        lease.counterLeft = Math.max(0, limit - count);
        lease.last = count >= limit;
        return undefined;
      },
      (error: unknown) => ({ error }),
    )
    .finally(() => {
      lease.pending = undefined;
    });
  return lease.pending;
};

/** One container's leases, one per key (its current window), at most `max` keys. */
export const leases = (max: number) => {
  const memory = windowMemory<Lease>(max, (lease) => lease.endsAt);
  const leaseOf = (call: LeaseCall, at: number): Lease => {
    const held = memory.get(call.keyId);
    if (held?.endsAt === call.endsAt) return held;
    const fresh: Lease = { endsAt: call.endsAt, tokens: 0, counterLeft: call.limit, last: false };
    memory.remember(call.keyId, fresh, at);
    return fresh;
  };
  return {
    /** Admits from the lease, taking a block when it is empty: a write only every `block` calls. */
    acquire: async (call: LeaseCall, at: number): Promise<Outcome> => {
      const lease = leaseOf(call, at);
      for (;;) {
        const spent = spend(lease);
        if (spent) return spent;
        const failed = await refill(lease, call);
        if (failed) return failed;
      }
    },
    get size() {
      return memory.size;
    },
  };
};
