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
