/**
 * The local stack as `npm start` runs it, driven with autocannon from this process: requests/s
 * with the rollups current (their count, read with the CLI, equals the calls made), and its
 * resident memory (the process and its children, from /proc) along the run.
 */
import { demoBranch } from '../lib/fixtures';
import { load, requestsFor } from '../lib/load';
import { runCli, treeRss } from '../lib/processes';
import type { PartResult } from '../lib/report';
import type { LocalStack } from '../lib/stack';
import { round, slope } from '../lib/stats';

export const LOCAL_RPS = 200;
/**
 * "No growth" within noise, in MB per 10,000 requests: a call's records (about 1.4 KB) held in
 * memory would show as 14; the garbage between two collections moves the slope by a few.
 */
export const RSS_SLOPE_MB_PER_10K = 5;
const WARMUP = 2_000;
const REQUESTS = 20_000;
const CONNECTIONS = 8;
const SAMPLE_MS = 250;
const ROLLUPS_WAIT_MS = 30_000;
const MB = 1024 * 1024;

const rollupCalls = (stack: LocalStack): number => {
  const { stdout } = runCli(['usage', 'summary', '--branch', demoBranch.id, '--json'], {
    DYNAMODB_ENDPOINT: stack.dynamoEndpoint,
  });
  return (JSON.parse(stdout) as { totals: { calls: number } }).totals.calls;
};

export const runLocalStack = async (stack: LocalStack, keys: readonly string[]): Promise<PartResult> => {
  const pid = stack.process.child.pid!;
  const requests = requestsFor(stack.baseUrl, keys);
  await load(stack.baseUrl, { connections: CONNECTIONS, amount: WARMUP, requests });

  let answered = 0;
  const samples = [{ answered, ...treeRss(pid) }];
  const sampler = setInterval(() => samples.push({ answered, ...treeRss(pid) }), SAMPLE_MS);
  let seconds: number;
  try {
    ({ seconds } = await load(stack.baseUrl, {
      connections: CONNECTIONS,
      amount: REQUESTS,
      requests,
      onResponse: (count) => (answered = count),
    }));
  } finally {
    clearInterval(sampler);
  }
  const loadEnded = performance.now();
  samples.push({ answered, ...treeRss(pid) });

  // Every call made to this stack: its first 200, the warm-up and the run.
  const calls = stack.callsMade + WARMUP + REQUESTS;
  let rolledUp = rollupCalls(stack);
  while (rolledUp !== calls && performance.now() - loadEnded < ROLLUPS_WAIT_MS) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    rolledUp = rollupCalls(stack);
  }
  if (rolledUp !== calls) throw new Error(`local stack: the rollups count ${rolledUp} calls of ${calls}`);
  const currentAfterS = round((performance.now() - loadEnded) / 1000, 1);

  const secondHalf = samples.filter((one) => one.answered >= REQUESTS / 2);
  const mbPer10k = (pick: 'rss' | 'anon') =>
    round(
      (slope(
        secondHalf.map((one) => one.answered),
        secondHalf.map((one) => one[pick]),
      ) *
        10_000) /
        MB,
      2,
    );
  const figures = {
    connections: CONNECTIONS,
    warmup: WARMUP,
    requests: REQUESTS,
    requestsPerSecond: round(REQUESTS / seconds, 0),
    rollupsCurrentAfterS: currentAfterS,
    rssStartMb: round(samples[0]!.rss / MB, 1),
    rssEndMb: round(samples.at(-1)!.rss / MB, 1),
    rssSlopeMbPer10k: mbPer10k('rss'),
    anonSlopeMbPer10k: mbPer10k('anon'),
    samples: samples.length,
  };
  return {
    figures,
    rows: [
      {
        figure: `Local stack: requests/s at c=${CONNECTIONS} over ${REQUESTS} requests, rollups current ${currentAfterS} s after (${calls} calls counted)`,
        measured: String(figures.requestsPerSecond),
        target: `≥ ${LOCAL_RPS}`,
        met: figures.requestsPerSecond >= LOCAL_RPS,
      },
      {
        figure: `Local stack: RSS slope over the second half, MB per 10,000 requests (of it anonymous memory ${figures.anonSlopeMbPer10k}; RSS ${figures.rssStartMb} → ${figures.rssEndMb} MB over the run)`,
        measured: String(figures.rssSlopeMbPer10k),
        target: `≤ ${RSS_SLOPE_MB_PER_10K}`,
        met: figures.rssSlopeMbPer10k <= RSS_SLOPE_MB_PER_10K,
      },
    ],
  };
};
