/**
 * The CLI as a user runs it (`node bin/branch-api.js`, whatever it is when the bench runs):
 * `--version` beside a bare commander program, `keys list` against the running local stack, and
 * the time from spawning the console to its first 200. Each run's answer is checked.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { demoBranch, PROJECT_ROOT } from '../lib/fixtures';
import { CLI, getOk, runCli, runNode, startNode } from '../lib/processes';
import type { PartResult } from '../lib/report';
import type { LocalStack } from '../lib/stack';
import { median, round } from '../lib/stats';

export const VERSION_RATIO = 2;
export const KEYS_LIST_MS = 500;
const RUNS = 7;
const STARTS = 3;

const { version } = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string };

const expectOutput = (stdout: string, expected: string, what: string) => {
  if (!stdout.includes(expected)) throw new Error(`${what} printed ${stdout.slice(0, 300)}, not ${expected}`);
};

/** Median wall time of `branch-api console` from spawn to the first 200 of its home page, ms. */
const consoleStart = async (stack: LocalStack): Promise<number> => {
  const started = await startNode(
    [CLI, 'console', '--port', '0', '--branch', demoBranch.id],
    { DYNAMODB_ENDPOINT: stack.dynamoEndpoint },
    /Settings console: (\S+)/,
  );
  try {
    await getOk(started.match[1]!);
    return performance.now() - started.spawnedAt;
  } finally {
    await started.stop();
  }
};

/** `startMs`: `npm start` from spawn to its first 200, one per start the bench made. */
export const runCliPart = async (stack: LocalStack, keyName: string, startMs: number[]): Promise<PartResult> => {
  const cli: number[] = [];
  const bare: number[] = [];
  for (let run = 0; run < RUNS; run += 1) {
    const ours = runCli(['--version']);
    expectOutput(ours.stdout, version, 'branch-api --version');
    const theirs = runNode([join(PROJECT_ROOT, 'bench', 'bare', 'commander.mjs'), '--version']);
    expectOutput(theirs.stdout, '0.1.0', 'the bare commander program');
    cli.push(ours.ms);
    bare.push(theirs.ms);
  }
  const keysList: number[] = [];
  for (let run = 0; run < RUNS; run += 1) {
    const listed = runCli(['keys', 'list', '--branch', demoBranch.id], { DYNAMODB_ENDPOINT: stack.dynamoEndpoint });
    expectOutput(listed.stdout, keyName, 'keys list');
    keysList.push(listed.ms);
  }
  const consoleMs: number[] = [];
  for (let run = 0; run < STARTS; run += 1) consoleMs.push(await consoleStart(stack));

  const figures = {
    versionMs: round(median(cli), 0),
    bareVersionMs: round(median(bare), 0),
    versionRatio: round(median(cli) / median(bare), 2),
    keysListMs: round(median(keysList), 0),
    serveFirstOkMs: round(median(startMs), 0),
    consoleFirstOkMs: round(median(consoleMs), 0),
  };
  return {
    figures,
    rows: [
      {
        figure: `CLI: \`branch-api --version\` ÷ a bare commander program, wall, median of ${RUNS} (${figures.versionMs} ÷ ${figures.bareVersionMs} ms)`,
        measured: `${figures.versionRatio}×`,
        target: `≤ ${VERSION_RATIO}×`,
        met: figures.versionRatio <= VERSION_RATIO,
      },
      {
        figure: `CLI: \`keys list\` against the running local stack, wall, ms, median of ${RUNS}`,
        measured: String(figures.keysListMs),
        target: `≤ ${KEYS_LIST_MS}`,
        met: figures.keysListMs <= KEYS_LIST_MS,
      },
      {
        figure: `\`npm start\`: spawn to its first 200 (GET /v1/branch with the demo key), ms, median of ${startMs.length}`,
        measured: String(figures.serveFirstOkMs),
        target: 'reported',
        met: null,
      },
      {
        figure: `\`branch-api console\`: spawn to its first 200 (home page), ms, median of ${STARTS}`,
        measured: String(figures.consoleFirstOkMs),
        target: 'reported',
        met: null,
      },
    ],
  };
};
