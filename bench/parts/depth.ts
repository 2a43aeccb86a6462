/**
 * Sequential DynamoDB depth: how many DynamoDB round trips a call waits for, one after another
 * (docs/performance.md). A fixed delay is injected in front of the embedded DynamoDB
 * (bench/lib/delay-proxy.ts) at several values; the p50 of a call grows by the delay once per
 * round trip it waits for, so the slope of p50 over the delay is that count. The yardstick: a
 * bare server making one data read a call, which scores 1. Writes the figures the cost model
 * reads (lib/infra/cost-inputs.json `bench`).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { DEMO_SEED_FILE } from '../../lib/project-paths';
import { COST_INPUTS_FILE, type MeasuredInputs } from '../../lib/infra/cost';
import { tableDefinitions } from '../../shared/data/tables';
import { hashApiKey } from '../../shared/domain/api-key';
import { startDelayProxy } from '../lib/delay-proxy';
import { demoBranch, ENDPOINTS } from '../lib/fixtures';
import { LOAD_KEY_RATE_LIMIT } from '../lib/load';
import { cpuMs, runCli, startChild, type Child } from '../lib/processes';
import type { PartResult } from '../lib/report';
import { createKeys } from '../lib/stack';
import { median, round, slope } from '../lib/stats';
import { timedGet } from './end-to-end';

/** The floor of this design: the key read, the data read (beside the counter), the usage write. */
export const DEPTH_FLOOR = 3;
export const DEPTH_TARGET = 3.2;
/**
 * Large beside the noise of a busy machine, and none of them 0: a process that waits is woken
 * late on a busy machine, once per wait, at any delay but 0, so 0 would add a step to the slope.
 */
const DELAYS_MS = [50, 100, 150, 200];
/** Rounds over every delay, in alternating order, so a change in the machine's load falls on each. */
const ROUNDS = 8;
const PER_ROUND = 5;
const WARMUP = 40;
/** Calls over which the gateway's CPU time is read (its /proc figure moves in 10 ms ticks). */
const CPU_CALLS = 400;

/** `count` sequential calls over `paths`, round robin: their times in ms. */
const timesOf = async (
  agent: Agent,
  baseUrl: string,
  paths: readonly string[],
  key: string,
  counted: boolean,
  count: number,
) => {
  const times: number[] = [];
  for (let i = 0; i < count; i += 1)
    times.push(await timedGet(agent, `${baseUrl}${paths[i % paths.length]}`, key, counted));
  return times;
};

export const runDepth = async (): Promise<PartResult> => {
  const children: Child<unknown>[] = [];
  const dynamo = await startChild<{ endpoint: string }>('bench/children/dynamo.ts', {});
  children.push(dynamo);
  const proxy = await startDelayProxy(dynamo.ready.endpoint);
  try {
    const { endpoint } = dynamo.ready;
    runCli(['tables', 'create'], { DYNAMODB_ENDPOINT: endpoint });
    runCli(['seed', DEMO_SEED_FILE], { DYNAMODB_ENDPOINT: endpoint });
    const [key] = createKeys(endpoint, 1, LOAD_KEY_RATE_LIMIT);
    const env = {
      DYNAMODB_ENDPOINT: proxy.endpoint,
      AWS_REGION: 'local',
      POWERTOOLS_LOG_LEVEL: 'INFO',
      // A DynamoDB this slow is what the part simulates: the call bound grows with it, so no call times out.
      DYNAMODB_DEADLINE_MS: '20000',
      ...Object.fromEntries(tableDefinitions.map((table) => [table.envVar, table.localName])),
    };
    const gateway = await startChild<{ baseUrl: string }>('bench/children/gateway.ts', env);
    children.push(gateway);
    const bare = await startChild<{ baseUrl: string }>('bench/children/bare-server.ts', {
      ...env,
      BENCH_KEY_HASH: hashApiKey(key!),
      BENCH_ONE_READ: demoBranch.id,
    });
    children.push(bare);
    const paths = ENDPOINTS.map((one) => one.path);
    const sides = [
      { name: 'gateway', baseUrl: gateway.ready.baseUrl, counted: true },
      { name: 'bare', baseUrl: bare.ready.baseUrl, counted: false },
    ] as const;
    const agents = sides.map(() => new Agent({ keepAlive: true, maxSockets: 1 }));
    const times = sides.map(() => DELAYS_MS.map(() => [] as number[]));
    let gatewayCpuMs = 0;
    try {
      for (const [i, side] of sides.entries())
        await timesOf(agents[i]!, side.baseUrl, paths, key!, side.counted, WARMUP);
      // Warm (the handlers loaded and compiled, as in a warm container), with no delay: only the calls' own CPU.
      proxy.setDelay(0);
      const cpuBefore = cpuMs(gateway.pid);
      await timesOf(agents[0]!, gateway.ready.baseUrl, paths, key!, true, CPU_CALLS);
      gatewayCpuMs = round((cpuMs(gateway.pid) - cpuBefore) / CPU_CALLS, 2);
      for (let round_ = 0; round_ < ROUNDS; round_ += 1) {
        const order = DELAYS_MS.map((_delay, d) => d);
        for (const d of round_ % 2 === 0 ? order : order.reverse()) {
          proxy.setDelay(DELAYS_MS[d]!);
          for (const [i, side] of sides.entries()) {
            times[i]![d]!.push(...(await timesOf(agents[i]!, side.baseUrl, paths, key!, side.counted, PER_ROUND)));
          }
        }
      }
    } finally {
      for (const agent of agents) agent.destroy();
    }
    const p50 = { gateway: times[0]!.map(median), bare: times[1]!.map(median) };
    // The bare handler's slope calibrates the injected delay (a busy machine's timers run late): it scores 1.
    const slopes = { gateway: slope(DELAYS_MS, p50.gateway), bare: slope(DELAYS_MS, p50.bare) };
    const depth = { gateway: round(slopes.gateway / slopes.bare, 2), bare: round(slopes.bare, 2) };
    const inputs = JSON.parse(readFileSync(COST_INPUTS_FILE, 'utf8')) as MeasuredInputs;
    const bench = {
      sequentialDepth: depth.gateway,
      bareDepth: 1,
      cpuMs: gatewayCpuMs,
      date: new Date().toISOString().slice(0, 10),
    };
    writeFileSync(COST_INPUTS_FILE, `${JSON.stringify({ ...inputs, bench }, null, 2)}\n`);
    const curve = (side: 'gateway' | 'bare') =>
      DELAYS_MS.map((delay, i) => `${delay} ms: ${round(p50[side][i]!, 1)}`).join(', ');
    return {
      figures: { delaysMs: DELAYS_MS, samples: ROUNDS * PER_ROUND, p50, slopes, depth, gatewayCpuMs },
      rows: [
        {
          figure: `Sequential DynamoDB depth: p50 slope over an injected delay ÷ the bare one-read slope (p50 at ${curve('gateway')})`,
          measured: String(depth.gateway),
          target: `≤ ${DEPTH_TARGET} (floor ${DEPTH_FLOOR})`,
          met: depth.gateway <= DEPTH_TARGET,
        },
        {
          figure: `Slope of a bare handler with one read, its yardstick (p50 at ${curve('bare')})`,
          measured: String(depth.bare),
          target: '1',
          met: null,
        },
        {
          figure: 'CPU time of the local gateway per call (the billed-duration input of lib/infra/cost.ts)',
          measured: `${gatewayCpuMs} ms`,
          target: '',
          met: null,
        },
      ],
    };
  } finally {
    await proxy.close();
    for (const child of children.reverse()) await child.stop();
  }
};
