/**
 * The runaway-key scenario of `npm run load` and test/reliability/runaway.test.ts
 * (docs/decisions.md "Rate limits"): a well-behaved key calls at a steady pace below its limit,
 * first alone, then beside a runaway key of the same branch hammering at ten times its limit or
 * more. Figures: the well-behaved key's 429s, 5xx and p50 (alone and beside), the runaway key's
 * rate and the most calls admitted in any one window, and whether every call has its usage record.
 *
 * Plain TypeScript, no jest; the environment (DYNAMODB_ENDPOINT, *_TABLE) must be set first.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { parseRateLimit } from '../../shared/domain/rate-limit';
import { startGateway } from '../../lib/local/gateway';
import { drive, headerValue } from '../lib/load';
import { median } from '../lib/stats';
import { reliabilityBranch } from './branches';
import { openStore, scanAll, type SeenRecord } from './ledger';

export interface RunawayOptions {
  /** Length of each phase (alone, beside), in seconds. @default 3 */
  seconds?: number;
  /** The limit of both keys. @default '20/s' */
  limit?: string;
  /** The well-behaved key's pace, calls per second (below its limit). @default 10 */
  wellBehavedPerSecond?: number;
  /** Connections of the runaway key. @default 8 */
  connections?: number;
  /**
   * Counted phases instead of timed ones (CI on a busy machine): the well-behaved key makes
   * `wellBehaved` calls alone, back to back, then as many beside the runaway key, which makes
   * `runaway` calls: its i-th call once the runaway key has had i/(wellBehaved + 1) of its
   * answers, so every one lands inside the flood whatever the machine's speed. Every call must be
   * answered, and the run waits until every answered call's usage record is stored.
   */
  calls?: { wellBehaved: number; runaway: number };
}

interface Phase {
  requests: number;
  p50Ms: number;
  status429: number;
  status5xx: number;
  other: number;
}

export interface RunawayReport {
  limit: string;
  seconds: number;
  /** Counted phases (RunawayOptions.calls): `seconds` then does not apply. */
  counted: boolean;
  /** Counted phases: the calls the runaway key was to make (each must be answered). */
  runawayCalls: number;
  wellBehaved: { alone: Phase; beside: Phase; p50Ratio: number };
  runaway: {
    sent: number;
    perSecond: number;
    /** Calls in its busiest window ÷ its limit: how hard it hammered, counted from the usage table. */
    timesLimit: number;
    admitted: number;
    refused: number;
    other: number;
    /** The most calls admitted (usage records with status 200) in one window. */
    maxAdmittedPerWindow: number;
  };
  records: { expected: number; found: number };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** How long a counted run waits for answers and records before it gives up: a safety net, not a measure. */
const COUNTED_SAFETY_NET_MS = 120_000;

/** Answers of the runaway key so far, and a way to wait until there are `n` (or the flood ended). */
const answerCounter = () => {
  let count = 0;
  let ended = false;
  let waiters: { n: number; resolve: () => void }[] = [];
  const release = () => {
    waiters = waiters.filter((waiter) => (ended || count >= waiter.n ? (waiter.resolve(), false) : true));
  };
  return {
    answered: () => {
      count += 1;
      release();
    },
    end: () => {
      ended = true;
      release();
    },
    until: (n: number) => new Promise<void>((resolve) => (waiters.push({ n, resolve }), release())),
  };
};

/** Scans the usage table until every id is stored (or the safety net runs out); returns what it holds. */
const untilStored = async (client: DynamoDBDocumentClient, table: string, ids: readonly string[]) => {
  const giveUpAt = performance.now() + COUNTED_SAFETY_NET_MS;
  for (;;) {
    const records = (await scanAll(client, table)) as SeenRecord[];
    const stored = new Set(records.map((record) => record.request_id));
    if (ids.every((id) => stored.has(id)) || performance.now() > giveUpAt) return records;
    await sleep(100);
  }
};

export const runRunaway = async (options: RunawayOptions = {}): Promise<RunawayReport> => {
  const seconds = options.seconds ?? 3;
  const limit = options.limit ?? '20/s';
  const pace = options.wellBehavedPerSecond ?? 10;
  const policy = parseRateLimit(limit);
  const { client, tables, branchData, keys } = await openStore();
  const branch = reliabilityBranch(90);
  await branchData.putBranch(branch);
  const make = (name: string) => keys.create({ branchId: branch.id, scopes: ['read'], rateLimit: limit, name });
  const [good, runaway] = [await make('load: well-behaved'), await make('load: runaway')];
  const gateway = await startGateway({ port: 0 });
  const url = `${gateway.baseUrl}/v1/branch`;
  const requestIds: string[] = [];

  /**
   * The well-behaved key, each call timed: timed, one call every 1/pace s for `seconds`; counted,
   * `calls.wellBehaved` calls, each once `before(i)` allows it.
   */
  const steady = async (before?: (call: number) => Promise<void>): Promise<Phase> => {
    const phase: Phase = { requests: 0, p50Ms: 0, status429: 0, status5xx: 0, other: 0 };
    const latencies: number[] = [];
    const end = performance.now() + seconds * 1000;
    const more = (next: number) => (options.calls ? phase.requests < options.calls.wellBehaved : next < end);
    for (let next = performance.now(); more(next); next += 1000 / pace) {
      if (options.calls) await before?.(phase.requests);
      else await sleep(Math.max(0, next - performance.now()));
      const started = performance.now();
      const res = await fetch(url, { headers: { authorization: `Bearer ${good.key}` } });
      await res.arrayBuffer();
      latencies.push(performance.now() - started);
      phase.requests += 1;
      if (res.status === 429) phase.status429 += 1;
      else if (res.status >= 500) phase.status5xx += 1;
      else if (res.status !== 200) phase.other += 1;
      requestIds.push(res.headers.get('x-request-id') ?? '');
    }
    return { ...phase, p50Ms: median(latencies) };
  };

  try {
    const alone = await steady();
    const counts = { sent: 0, admitted: 0, refused: 0, other: 0 };
    const answers = answerCounter();
    const hammer = drive(url, {
      connections: options.connections ?? 8,
      ...(options.calls ? { amount: options.calls.runaway } : { seconds }),
      // Counted: every call is answered, however slow the machine (the timeout is a safety net).
      timeout: options.calls ? COUNTED_SAFETY_NET_MS / 1000 : 10,
      headers: { authorization: `Bearer ${runaway.key}` },
      requests: [
        {
          onResponse: (status, _body, _context, headers = {}) => {
            counts.sent += 1;
            answers.answered();
            if (status === 200) counts.admitted += 1;
            else if (status === 429) counts.refused += 1;
            else counts.other += 1;
            requestIds.push(headerValue(headers, 'x-request-id') ?? '');
          },
        },
      ],
    }).finally(answers.end);
    const runawayCalls = options.calls?.runaway ?? 0;
    const share = (call: number) => Math.ceil(((call + 1) * runawayCalls) / ((options.calls?.wellBehaved ?? 0) + 1));
    const [beside] = await Promise.all([steady((call) => answers.until(share(call))), hammer]);
    const table = options.calls
      ? await untilStored(client, tables.usage, requestIds)
      : await settledTable(client, tables.usage);
    const stored = new Set(table.map((record) => record.request_id));
    const windowMs = policy.windowSeconds * 1000;
    const perWindow = new Map<number, number>();
    const sentPerWindow = new Map<number, number>();
    for (const record of table) {
      if (record.key_id !== runaway.record.key_id) continue;
      const window = Math.floor(Date.parse(String(record.timestamp)) / windowMs);
      sentPerWindow.set(window, (sentPerWindow.get(window) ?? 0) + 1);
      if (record.status === 200) perWindow.set(window, (perWindow.get(window) ?? 0) + 1);
    }
    const perSecond = counts.sent / seconds;
    return {
      limit,
      seconds,
      counted: options.calls !== undefined,
      runawayCalls,
      wellBehaved: { alone, beside, p50Ratio: beside.p50Ms / alone.p50Ms },
      runaway: {
        ...counts,
        perSecond,
        timesLimit: Math.max(0, ...sentPerWindow.values()) / policy.limit,
        maxAdmittedPerWindow: Math.max(0, ...perWindow.values()),
      },
      records: { expected: requestIds.length, found: requestIds.filter((id) => id && stored.has(id)).length },
    };
  } finally {
    await gateway.close();
    client.destroy();
  }
};

/** Timed runs: calls autocannon abandoned at the end still finish on the server; let their writes land. */
const settledTable = async (client: DynamoDBDocumentClient, table: string) => {
  let records = (await scanAll(client, table)) as SeenRecord[];
  for (let tries = 0; tries < 10; tries += 1) {
    await sleep(200);
    const again = (await scanAll(client, table)) as SeenRecord[];
    if (again.length === records.length) break;
    records = again;
  }
  return records;
};

/** What broke, if anything: the invariants of the scenario (the p50 ratio is a figure, not one of them). */
export const runawayProblems = (report: RunawayReport): string[] => {
  const problems: string[] = [];
  const { wellBehaved, runaway, records } = report;
  const limit = parseRateLimit(report.limit).limit;
  for (const [name, phase] of Object.entries({ alone: wellBehaved.alone, beside: wellBehaved.beside })) {
    if (phase.status429 || phase.status5xx || phase.other) {
      problems.push(`well-behaved key (${name}): ${phase.status429} 429, ${phase.status5xx} 5xx, ${phase.other} other`);
    }
  }
  if (runaway.timesLimit < 10) {
    problems.push(`runaway key only reached ${runaway.timesLimit.toFixed(1)}× its limit in its busiest window`);
  }
  if (runaway.maxAdmittedPerWindow > limit) {
    problems.push(`runaway key: ${runaway.maxAdmittedPerWindow} calls admitted in one window (limit ${limit})`);
  }
  if (runaway.other) problems.push(`runaway key: ${runaway.other} answers other than 200/429`);
  if (report.counted && runaway.sent !== report.runawayCalls) {
    problems.push(`runaway key: ${runaway.sent} of ${report.runawayCalls} calls answered`);
  }
  if (records.found !== records.expected) problems.push(`usage records: ${records.found} of ${records.expected}`);
  return problems;
};

export const formatRunaway = (report: RunawayReport): string => {
  const { wellBehaved: good, runaway } = report;
  const phase = (p: Phase) =>
    `${p.requests} calls, p50 ${p.p50Ms.toFixed(1)} ms, ${p.status429} × 429, ${p.status5xx} × 5xx`;
  return [
    `Runaway key (both keys ${report.limit}, ${report.counted ? 'counted phases' : `${report.seconds} s per phase`}):`,
    `  well-behaved alone:   ${phase(good.alone)}`,
    `  well-behaved beside:  ${phase(good.beside)}  (p50 ×${good.p50Ratio.toFixed(2)})`,
    `  runaway:              ${runaway.sent} calls${report.counted ? '' : `, ${runaway.perSecond.toFixed(0)}/s`}, ${runaway.timesLimit.toFixed(1)}× its limit in its busiest window; ` +
      `${runaway.admitted} admitted, ${runaway.refused} × 429; at most ${runaway.maxAdmittedPerWindow} admitted in one window`,
    `  usage records:        ${report.records.found} of ${report.records.expected} calls`,
  ].join('\n');
};
