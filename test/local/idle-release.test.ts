/**
 * The local stack gives memory back once its API goes idle (lib/local/idle-release.ts): one
 * memory-reducing GC per idle period, none while requests keep coming. Jest's fake clock drives
 * the periods, and the `gc` given is a counter standing in for V8's (jest runs without
 * --expose-gc): the test counts the calls the stack makes, not what V8 frees.
 */
import { idleRelease } from '../../lib/local/idle-release';

beforeEach(() => jest.useFakeTimers());
afterEach(() => jest.useRealTimers());

const counting = () => {
  const calls: unknown[] = [];
  return { calls, gc: (options: unknown) => void calls.push(options) };
};

it('runs one memory-reducing GC once no request has come for the idle period', () => {
  const { calls, gc } = counting();
  const idle = idleRelease({ idleMs: 1_000, gc });
  idle.touch();
  jest.advanceTimersByTime(999);
  expect(calls).toHaveLength(0);
  jest.advanceTimersByTime(1);
  expect(calls).toEqual([{ type: 'major', execution: 'sync', flavor: 'last-resort' }]);
  // Still idle: nothing more until a request starts a new period.
  jest.advanceTimersByTime(10_000);
  expect(idle.releases()).toBe(1);
  idle.touch();
  jest.advanceTimersByTime(1_000);
  expect(idle.releases()).toBe(2);
});

it('runs none while requests keep coming, however long', () => {
  const { calls, gc } = counting();
  const idle = idleRelease({ idleMs: 1_000, gc });
  for (let request = 0; request < 100; request += 1) {
    idle.touch();
    jest.advanceTimersByTime(500);
  }
  expect(calls).toHaveLength(0);
  jest.advanceTimersByTime(500);
  expect(calls).toHaveLength(1);
});

it('does nothing without a gc, and nothing after close', () => {
  const without = idleRelease({ idleMs: 1_000, gc: undefined });
  without.touch();
  expect(jest.getTimerCount()).toBe(0);
  const { calls, gc } = counting();
  const closed = idleRelease({ idleMs: 1_000, gc });
  closed.touch();
  closed.close();
  jest.advanceTimersByTime(5_000);
  expect(calls).toHaveLength(0);
});
