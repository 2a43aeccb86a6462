/**
 * How `npm start` picks the Node it runs in (lib/local/launch.ts): started again with the local
 * stack's flags unless it has them, or the user sized V8's young generation or heap themselves.
 */
import { childExecArgv, exitCodeOf, LOCAL_STACK_NODE_FLAGS, needsRelaunch } from '../../lib/local/launch';

describe('needsRelaunch', () => {
  it('starts Node again when the flags are missing', () => {
    expect(needsRelaunch([], '')).toBe(true);
    expect(needsRelaunch(['--enable-source-maps'], '--trace-warnings')).toBe(true);
  });

  it('runs on when this Node has the flags, as arguments or in NODE_OPTIONS', () => {
    expect(needsRelaunch([...LOCAL_STACK_NODE_FLAGS], '')).toBe(false);
    expect(needsRelaunch(['--min-semi-space-size=16'], '--expose-gc --max-semi-space-size=16')).toBe(false);
  });

  it('never on Windows, where a forwarded signal would kill the stack outright', () => {
    expect(needsRelaunch([], '', 'win32')).toBe(false);
    expect(needsRelaunch([], '', 'darwin')).toBe(true);
  });

  it("keeps the user's own sizing of the young generation or the heap", () => {
    // NODE_OPTIONS takes only some of V8's flags (Node refuses --min-semi-space-size there).
    expect(needsRelaunch(['--max-semi-space-size=64'], '')).toBe(false);
    expect(needsRelaunch([], '--max-semi-space-size=64')).toBe(false);
    expect(needsRelaunch(['--min-semi-space-size=4'], '')).toBe(false);
    expect(needsRelaunch(['--max-heap-size=512'], '')).toBe(false);
    expect(needsRelaunch(['--heap-growing-percent=100'], '')).toBe(false);
    // A different heap flag is not a young generation size.
    expect(needsRelaunch(['--max-old-space-size=4096'], '')).toBe(true);
  });
});

describe('the stack process', () => {
  it("gets Node's arguments but not the inspector's, whose port the launcher holds", () => {
    expect(childExecArgv(['--require', 'x.cjs', '--inspect', '--inspect-brk=9230', '--enable-source-maps'])).toEqual([
      '--require',
      'x.cjs',
      '--enable-source-maps',
    ]);
  });

  it('passes its exit on: a code as it is, a signal as 128 + its number', () => {
    expect(exitCodeOf(0, null)).toBe(0);
    expect(exitCodeOf(3, null)).toBe(3);
    expect(exitCodeOf(null, 'SIGTERM')).toBe(143);
    expect(exitCodeOf(null, 'SIGINT')).toBe(130);
  });
});
