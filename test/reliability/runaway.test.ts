/**
 * The runaway-key scenario of `npm run load`, at CI size (bench/reliability/runaway.ts), counted
 * rather than timed: a key hammering at ten times its limit or more in its busiest window never
 * gets more than its limit admitted in a window, and a well-behaved key of the same branch beside
 * it gets no 429 and no 5xx. Every call is answered and recorded.
 *
 * Nothing here depends on the machine's speed (it used to fail when the machine was busy):
 * - Hour windows: the 220 calls fall in one window, or two if the run crosses an hour, so the
 *   busiest holds at least 110 (11× the limit) however long the run takes (a minute window spread a
 *   slow run over three). The well-behaved key's 8 calls stay under the same limit of 10.
 * - The well-behaved key's calls beside the flood are placed by the flood's answers, not by a clock.
 * - The run waits until every answered call's record is stored, instead of for scans to stop changing.
 * - DynamoDB timeouts of a slow machine, not the 1 s a Lambda gets: with those, a busy 2-core CI
 *   timed out the limiter's counter (failing open), the usage writes (records lost to the log) and
 *   reads (503 to the well-behaved key). Timeouts are faults, and test/reliability/faults.test.ts
 *   injects them on purpose; this scenario is about the limiter.
 */
import type { RunawayReport } from '../../bench/reliability/runaway';
import { report } from './support/suite';

Object.assign(process.env, {
  DYNAMODB_CONNECT_TIMEOUT_MS: '5000',
  DYNAMODB_REQUEST_TIMEOUT_MS: '30000',
  DYNAMODB_DEADLINE_MS: '61000',
});

let result: RunawayReport;
let problems: (report: RunawayReport) => string[];

beforeAll(async () => {
  // Loaded after the timeouts are set: the functions read their configuration once, when loaded.
  const { formatRunaway, runawayProblems, runRunaway } = await import('../../bench/reliability/runaway');
  problems = runawayProblems;
  result = await runRunaway({ limit: '10/h', calls: { wellBehaved: 4, runaway: 220 }, connections: 4 });
  report(formatRunaway(result));
}, 300_000);

it('holds every invariant: the limit per window, no refusal of the well-behaved key, one record per call', () => {
  expect(problems(result)).toEqual([]);
  // The busiest window holds 110 calls or more: exactly its limit admitted there.
  expect(result.runaway).toMatchObject({ sent: 220, maxAdmittedPerWindow: 10 });
  expect(result.runaway.admitted + result.runaway.refused).toBe(220);
  expect(result.records).toEqual({ expected: 228, found: 228 });
});
