/**
 * The runaway-key scenario of `npm run load`, at CI size (support/runaway.ts), counted rather than
 * timed: a key hammering at ten times its limit or more in its busiest window never gets more than its limit admitted in a window, and a
 * well-behaved key of the same branch beside it gets no 429 and no 5xx. Every call is recorded.
 */
import { formatRunaway, runawayProblems, runRunaway, type RunawayReport } from './support/runaway';
import { report } from './support/suite';

let result: RunawayReport;

beforeAll(async () => {
  // Counted, not timed: a minute window holds the whole run on any machine that makes 7 calls/s.
  result = await runRunaway({ limit: '20/min', calls: { wellBehaved: 8, runaway: 440 }, connections: 4 });
  report(formatRunaway(result));
}, 120_000);

it('holds every invariant: the limit per window, no refusal of the well-behaved key, one record per call', () => {
  expect(runawayProblems(result)).toEqual([]);
  expect(result.runaway.refused).toBeGreaterThan(0);
});
