/**
 * A clock that stands still: only Date is faked (set it with jest.setSystemTime), every timer
 * stays real, so repositories, retries and servers run as usual while each check reads exactly
 * the instant the test names, however slow the machine.
 */
export const freezeClock = (): void => {
  jest.useFakeTimers({
    doNotFake: [
      'hrtime',
      'nextTick',
      'performance',
      'queueMicrotask',
      'setImmediate',
      'clearImmediate',
      'setInterval',
      'clearInterval',
      'setTimeout',
      'clearTimeout',
    ],
  });
};

/** A window start: a whole hour, so it starts a 1 s, 1 min and 1 h rate-limit window alike. */
export const WINDOW_START = Date.UTC(2031, 0, 1, 12, 0, 0);

/** Sets the frozen clock to `seconds` into the window that starts at WINDOW_START. */
export const atSecondOfWindow = (seconds: number): void => jest.setSystemTime(WINDOW_START + seconds * 1000);
