/**
 * How `npm start` picks the Node it runs in (lib/local/launch.ts): started again with the local
 * stack's flags unless it has them, or the user sized V8's young generation or heap themselves.
 */
import { LOCAL_STACK_NODE_FLAGS, needsRelaunch } from '../../lib/local/launch';

describe('needsRelaunch', () => {
  it('starts Node again when the flags are missing', () => {
    expect(needsRelaunch([], '')).toBe(true);
    expect(needsRelaunch(['--enable-source-maps'], '--trace-warnings')).toBe(true);
  });

  it('runs on when this Node has the flags, as arguments or in NODE_OPTIONS', () => {
    expect(needsRelaunch([...LOCAL_STACK_NODE_FLAGS], '')).toBe(false);
    expect(needsRelaunch([], LOCAL_STACK_NODE_FLAGS.join(' '))).toBe(false);
  });

  it("keeps the user's own sizing of the young generation or the heap", () => {
    expect(needsRelaunch(['--max-semi-space-size=64'], '')).toBe(false);
    expect(needsRelaunch([], '--min-semi-space-size=4')).toBe(false);
    expect(needsRelaunch([], '--max-heap-size=512')).toBe(false);
    expect(needsRelaunch(['--heap-growing-percent=100'], '')).toBe(false);
    // A different heap flag is not a young generation size.
    expect(needsRelaunch(['--max-old-space-size=4096'], '')).toBe(true);
  });
});
