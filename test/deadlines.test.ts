/**
 * One timer for all of a repository's deadlines (shared/data/deadlines.ts): a call that settles in
 * time never expires, one that doesn't expires once, in start order, and the queue stays bounded
 * however many calls are made. Real timers with short deadlines; nothing asserts how long it took.
 */
import { Deadlines } from '../shared/data/deadlines';

/** A promise that resolves when `expire` is called, and a flag saying whether it was. */
const watch = () => {
  let expired = false;
  let done: () => void = () => undefined;
  const whenExpired = new Promise<void>((resolve) => (done = resolve));
  return {
    expire: () => {
      expired = true;
      done();
    },
    whenExpired,
    get expired() {
      return expired;
    },
  };
};

describe('Deadlines', () => {
  it('expires the calls still pending, each once and in start order, and never one settled in time', async () => {
    const deadlines = new Deadlines(20);
    const order: string[] = [];
    const [a, b, c] = ['a', 'b', 'c'].map((name) => {
      const w = watch();
      const deadline = deadlines.start(() => {
        order.push(name);
        w.expire();
      });
      return { w, deadline };
    });
    b!.deadline.settle();
    await Promise.all([a!.w.whenExpired, c!.w.whenExpired]);
    // Settling after expiry changes nothing, and a later wake-up expires nothing twice.
    a!.deadline.settle();
    const later = watch();
    deadlines.start(later.expire);
    await later.whenExpired;
    expect(order).toEqual(['a', 'c']);
    expect(b!.w.expired).toBe(false);
  });

  it('serves a call started after the timer was armed for an earlier one that settled', async () => {
    const deadlines = new Deadlines(20);
    deadlines.start(() => undefined).settle();
    const second = watch();
    deadlines.start(second.expire);
    await second.whenExpired;
    expect(second.expired).toBe(true);
  });

  it('holds no more than the calls in flight: 10,000 calls settled in turn leave one entry at most', () => {
    const deadlines = new Deadlines(60_000);
    let expired = 0;
    for (let i = 0; i < 10_000; i += 1) deadlines.start(() => (expired += 1)).settle();
    expect(deadlines.size).toBeLessThanOrEqual(1);
    expect(expired).toBe(0);
  });

  it('keeps expiring after a test swapped the timer functions out and back (a lost timer is re-armed)', async () => {
    jest.useFakeTimers({ doNotFake: ['performance', 'nextTick', 'queueMicrotask', 'hrtime'] });
    const deadlines = new Deadlines(10);
    // Armed on the fake clock, then the fake clock goes away with its timer.
    deadlines.start(() => undefined).settle();
    jest.useRealTimers();
    // Past the lost timer's time by more than a second of real time, a new call arms a real timer.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const call = watch();
    deadlines.start(call.expire);
    await call.whenExpired;
    expect(call.expired).toBe(true);
  });
});
