/**
 * The log file of `npm start` (lib/local/log-routing.ts) when it can't be written: /dev/full
 * answers every write with ENOSPC, as a full disk does, without a privilege or a mount.
 */
import type { TerminalText } from '../../lib/operator/terminal';
import { openLogAppender } from '../../lib/local/log-routing';

it('holds back what a full disk refuses, up to its bound, and says what it could not write', async () => {
  const told: string[] = [];
  const log = await openLogAppender('/dev/full', (text: TerminalText) => void told.push(text.toString()), 10_000);
  const line = `${'x'.repeat(99)}\n`;
  for (let i = 0; i < 300; i += 1) log.write(line);
  // 30 KB written, never more than the bound (and the line under way) held.
  expect(log.held()).toBeLessThanOrEqual(10_000 + line.length);
  expect(log.held()).toBeGreaterThan(10_000 - line.length);
  await log.close();
  expect(told).toEqual([
    "The log file /dev/full can't be written (ENOSPC: no space left on device, write); its lines wait in memory.",
    '30000 bytes of log lines could not be written to /dev/full.',
  ]);
});
