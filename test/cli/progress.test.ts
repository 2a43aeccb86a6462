/** Progress lines for long work: drawn on a terminal, erased when done, absent when piped. */
import { writeFile, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { progressLine, withProgress, type ProgressStream } from '../../lib/operator/progress';
import { runCli } from '../support/cli';
import { createKey, setUpBranches } from '../support/harness';

const fakeStream = (isTTY: boolean) => {
  const writes: string[] = [];
  const stream: ProgressStream = { isTTY, columns: 80, write: (text) => writes.push(text) > 0 };
  return { stream, writes };
};

it('draws a bar with the share done, at most once per whole percent, and erases it', async () => {
  const { stream, writes } = fakeStream(true);
  await withProgress(
    'Replaying',
    async (update) => {
      for (let done = 1; done <= 1000; done += 1) update(done, 1000);
    },
    stream,
  );
  // 1..1000 of 1000: percents 0..100, one redraw each, then the erase.
  expect(writes).toHaveLength(102);
  expect(writes[50]).toBe(`\r${progressLine('Replaying', 500, 1000)}\u001b[K`);
  expect(progressLine('Replaying', 500, 1000)).toBe('Replaying [############------------]  50% 500/1000');
  expect(writes.at(-1)).toBe('\r\u001b[K');
});

it('without a total, counts in hundreds', async () => {
  const { stream, writes } = fakeStream(true);
  await withProgress(
    'Rebuilding',
    async (update) => {
      for (let done = 1; done <= 1000; done += 1) update(done);
    },
    stream,
  );
  // One draw per hundred, 0 to 10, then the erase.
  expect(writes).toHaveLength(12);
  expect(writes.at(-2)).toContain('Rebuilding 1000');
});

it('writes nothing when the stream is no terminal, even when the work fails', async () => {
  const { stream, writes } = fakeStream(false);
  await expect(
    withProgress(
      'Seeding',
      async (update) => {
        update(1, 2);
        throw new Error('boom');
      },
      stream,
    ),
  ).rejects.toThrow('boom');
  expect(writes).toEqual([]);
});

it('the CLI piped: replay prints its result alone, no progress line', async () => {
  await setUpBranches();
  // Replay writes only into a key that exists and belongs to the record's branch.
  const key = await createKey();
  const dir = await mkdtemp(join(tmpdir(), 'replay-'));
  const file = join(dir, 'log.jsonl');
  const record = {
    key_id: key.record.key_id,
    branch_id: key.record.branch_id,
    method: 'GET',
    path: '/api/v1/branch',
    route: 'GET /v1/branch',
    status: 200,
    response_time_ms: 3,
    // Within the usage retention: older records are refused, as their rollups are gone.
    timestamp: new Date(Date.now() - 3_600_000).toISOString(),
    request_id: 'req-replay',
  };
  await writeFile(
    file,
    `${JSON.stringify({ level: 'ERROR', message: 'Usage record not stored', usage_record: record })}\n`,
  );
  const result = await runCli(['usage', 'replay', file]);
  expect(result.code).toBe(0);
  expect(result.stdout).toBe('Replayed 1 usage record(s) from 1 log line(s) (0 stored already)\n');
  expect(result.stderr).not.toContain('\r');
});
