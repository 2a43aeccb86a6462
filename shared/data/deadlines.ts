/**
 * The deadlines of a repository's calls, served by one timer instead of one per call
 * (docs/performance.md "Where the µs go"). Every call gets the same length, so deadlines fall in
 * the order calls start: the timer only wakes for the oldest call still pending, and is not
 * cleared when calls settle (it wakes, finds them settled and goes quiet), so a busy container
 * arms about one timer per deadline length instead of one per call.
 *
 * Bound: the queue holds the calls started within one deadline length of the oldest pending one
 * (settled ones leave from the front at the next call or wake-up), so it grows with calls per
 * second × the deadline, never with the number of calls made.
 */
interface Pending {
  /** `performance.now()` at which the call is past its deadline. */
  readonly at: number;
  readonly expire: () => void;
  settled: boolean;
}

/** A call whose deadline has passed: `settle()` it when it ends, whichever comes first. */
export interface Deadline {
  settle(): void;
}

/** A timer this far past its time was lost (a test's fake clock swapped out): arm a new one. */
const LOST_TIMER_MS = 1000;

export class Deadlines {
  private readonly queue: Pending[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** When the armed timer should wake; a wake-up from an older timer is ignored. */
  private timerAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly ms: number) {}

  /** Starts a deadline: `expire` runs once it passes, unless the returned deadline was settled first. */
  start(expire: () => void): Deadline {
    const now = performance.now();
    this.dropSettled();
    const entry: Pending = { at: now + this.ms, expire, settled: false };
    this.queue.push(entry);
    if (this.timer === undefined || now > this.timerAt + LOST_TIMER_MS) this.arm(entry.at, now);
    return {
      settle: () => {
        entry.settled = true;
      },
    };
  }

  /** Calls started and not yet settled or expired, and settled ones still queued behind them. */
  get size(): number {
    return this.queue.length;
  }

  private dropSettled(): void {
    while (this.queue[0]?.settled) this.queue.shift();
  }

  private arm(at: number, now: number): void {
    this.timerAt = at;
    const timer = setTimeout(() => this.wake(at), Math.max(0, Math.ceil(at - now)));
    // Never the reason a process (a CLI, a test run) stays alive.
    timer.unref?.();
    this.timer = timer;
  }

  private wake(armedFor: number): void {
    if (armedFor !== this.timerAt) return;
    this.timer = undefined;
    const now = performance.now();
    for (let head = this.queue[0]; head; head = this.queue[0]) {
      if (!head.settled && head.at > now) {
        this.arm(head.at, now);
        return;
      }
      this.queue.shift();
      if (!head.settled) {
        head.settled = true;
        head.expire();
      }
    }
  }
}
