/**
 * Gives memory back when the local stack goes idle (docs/capacity.md "Local stack").
 *
 * A full GC frees pages that V8 then keeps committed in a pool for the heap to reuse: after a
 * load of 20,000 requests, 22 to 29 MB of such pages (`--trace-gc-verbose`: "Pool buffering 114
 * chunks of committed: 29184 KB"), resident beside a live heap of 44 MB, and more or less of them
 * whenever RSS is read. Only a memory-reducing GC releases them. V8's own memory reducer did not
 * within 12 s of idleness here, so once the API has had no request for `idleMs`, the stack runs
 * one (the `gc` that `--expose-gc` gives, lib/local/launch.ts): once per idle period, never under
 * load. Without `gc` (Node started without the flag) it does nothing.
 */

/** How long the API must go without a request before the stack gives memory back. */
export const IDLE_RELEASE_MS = 5_000;

type Gc = (options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;

export interface IdleRelease {
  /** A request arrived: the idle period starts again. */
  touch(): void;
  /** Memory-reducing GCs run so far. */
  releases(): number;
  close(): void;
}

/** `gc`: V8's, by default; given as undefined, none. */
export const idleRelease = (options: { idleMs?: number; gc?: Gc | undefined } = {}): IdleRelease => {
  const idleMs = options.idleMs ?? IDLE_RELEASE_MS;
  const gc = 'gc' in options ? options.gc : (globalThis as { gc?: Gc }).gc;
  let timer: NodeJS.Timeout | undefined;
  let releases = 0;
  const release = () => {
    timer = undefined;
    gc?.({ type: 'major', execution: 'sync', flavor: 'last-resort' });
    releases += 1;
  };
  return {
    touch: () => {
      if (!gc) return;
      if (timer) timer.refresh();
      else timer = setTimeout(release, idleMs).unref();
    },
    releases: () => releases,
    close: () => {
      clearTimeout(timer);
      timer = undefined;
    },
  };
};
