/**
 * The local stack as `npm start` runs it, driven with autocannon from this process: requests/s
 * with the rollups current (their count, read with the CLI, equals the calls made), its resident
 * memory (the process and its children, from /proc) along the run, and the data its store holds.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { demoBranch } from '../lib/fixtures';
import { load, requestsFor } from '../lib/load';
import { runCli, treeRss } from '../lib/processes';
import type { PartResult } from '../lib/report';
import type { LocalStack } from '../lib/stack';
import { round, slope } from '../lib/stats';

const LOCAL_RPS = 200;
const WARMUP = 2_000;
const REQUESTS = 20_000;
const CONNECTIONS = 8;
const SAMPLE_MS = 250;
const ROLLUPS_WAIT_MS = 30_000;
const KB = 1024;
/** The store's own files in the data directory (LevelDB's tables, logs and manifest), not the stack's log. */
const STORE_FILE = /^(\d+\.(ldb|log)|MANIFEST-\d+)$/;

const rollupCalls = (stack: LocalStack): number => {
  const { stdout } = runCli(['usage', 'summary', '--branch', demoBranch.id, '--json'], {
    DYNAMODB_ENDPOINT: stack.dynamoEndpoint,
  });
  return (JSON.parse(stdout) as { totals: { calls: number } }).totals.calls;
};

/** CPU time of a process so far, all its threads, in ms (Linux /proc, clock ticks of 10 ms). */
const cpuMs = (pid: number): number => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
};

/** Bytes of the store's files in `dataDir`. */
const storeBytes = (dataDir: string): number =>
  readdirSync(dataDir)
    .filter((name) => STORE_FILE.test(name))
    .reduce((sum, name) => sum + statSync(join(dataDir, name)).size, 0);

export const runLocalStack = async (
  stack: LocalStack,
  keys: readonly string[],
  dataDir: string,
): Promise<PartResult> => {
  const pid = stack.process.child.pid!;
  const requests = requestsFor(stack.baseUrl, keys);
  await load(stack.baseUrl, { connections: CONNECTIONS, amount: WARMUP, requests });

  let answered = 0;
  const cpuBefore = cpuMs(pid);
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
  const cpuPerRequest = round((cpuMs(pid) - cpuBefore) / REQUESTS, 2);
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
  const kbPerRequest = (pick: 'rss' | 'anon') =>
    round(
      slope(
        secondHalf.map((one) => one.answered),
        secondHalf.map((one) => one[pick]),
      ) / KB,
      2,
    );
  const figures = {
    connections: CONNECTIONS,
    warmup: WARMUP,
    requests: REQUESTS,
    requestsPerSecond: round(REQUESTS / seconds, 0),
    cpuMsPerRequest: cpuPerRequest,
    rollupsCurrentAfterS: currentAfterS,
    rssStartMb: round(samples[0]!.rss / KB / KB, 1),
    rssEndMb: round(samples.at(-1)!.rss / KB / KB, 1),
    rssKbPerRequest: kbPerRequest('rss'),
    anonKbPerRequest: kbPerRequest('anon'),
    storeKbPerCall: round(storeBytes(dataDir) / calls / KB, 2),
    samples: samples.length,
  };
  return {
    figures,
    rows: [
      {
        figure: `Local stack: requests/s at c=${CONNECTIONS} over ${REQUESTS} requests (${cpuPerRequest} ms of CPU each), rollups current ${currentAfterS} s after (${calls} calls counted)`,
        measured: String(figures.requestsPerSecond),
        target: `≥ ${LOCAL_RPS}`,
        met: figures.requestsPerSecond >= LOCAL_RPS,
      },
      {
        figure: `Local stack: data its store holds, KB per call (LevelDB files after ${calls} calls)`,
        measured: String(figures.storeKbPerCall),
        target: 'reported',
        met: null,
      },
      {
        figure: `Local stack: RSS slope over the second half, KB per request (anonymous memory ${figures.anonKbPerRequest}; RSS ${figures.rssStartMb} → ${figures.rssEndMb} MB over the run)`,
        measured: String(figures.rssKbPerRequest),
        target: `≤ the data held per call (${figures.storeKbPerCall})`,
        met: figures.rssKbPerRequest <= figures.storeKbPerCall,
      },
    ],
  };
};
