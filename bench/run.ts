/**
 * `npm run bench`: the figures of docs/performance.md in one run, each beside its yardstick and
 * its target. Writes bench/results.json and bench/results.md and prints the table. Every part
 * checks every answer it gets: a bench that took an error path fails. `-- --only e2e,stack` runs
 * some parts (coldstart, overhead, e2e, depth, stack); only a full run writes the results.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { format, resolveConfig } from 'prettier';
import { PROJECT_ROOT } from './lib/fixtures';
import { LOAD_KEY_RATE_LIMIT, LOAD_KEYS } from './lib/load';
import { resultsTable, type PartResult } from './lib/report';
import { createKeys, startLocalStack } from './lib/stack';
import { round } from './lib/stats';
import { runCliPart } from './parts/cli';
import { runDepth } from './parts/depth';
import { runColdStart } from './parts/cold-start';
import { runEndToEnd } from './parts/end-to-end';
import { runLocalStack } from './parts/local-stack';
import { runOverhead } from './parts/overhead';

const OUT_DIR = join(PROJECT_ROOT, 'bench', 'out');
const started = Date.now();
const log = (line: string) => process.stderr.write(`[bench ${round((Date.now() - started) / 1000, 0)}s] ${line}\n`);
const load = () => loadavg().map((value) => round(value, 2));

/** The local stack, started as many times as its start is measured; the last one is loaded. */
const STACK_STARTS = 3;

const stackParts = async (): Promise<Record<string, PartResult>> => {
  const startMs: number[] = [];
  for (let start = 1; start < STACK_STARTS; start += 1) {
    const stack = await startLocalStack();
    startMs.push(stack.firstOkMs);
    await stack.process.stop();
  }
  // The loaded one keeps its store where the bench can weigh it.
  const dataDir = mkdtempSync(join(tmpdir(), 'branch-api-bench-'));
  const stack = await startLocalStack(dataDir);
  startMs.push(stack.firstOkMs);
  try {
    const keys = createKeys(stack.dynamoEndpoint, LOAD_KEYS, LOAD_KEY_RATE_LIMIT);
    log('CLI: --version, keys list, console start');
    const cli = await runCliPart(stack, 'bench 1', startMs);
    log('local stack: 20,000 requests, memory, rollups');
    return { cli, localStack: await runLocalStack(stack, keys, dataDir) };
  } finally {
    await stack.process.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
};

const PARTS: Record<string, () => Promise<Record<string, PartResult>>> = {
  coldstart: async () => ({ coldStart: await runColdStart(join(OUT_DIR, 'bundles')) }),
  overhead: async () => ({ overhead: await runOverhead(join(OUT_DIR, 'bundles')) }),
  e2e: async () => ({ endToEnd: await runEndToEnd() }),
  depth: async () => ({ depth: await runDepth() }),
  stack: stackParts,
};

const onlyAt = process.argv.indexOf('--only');
const only = onlyAt === -1 ? Object.keys(PARTS) : (process.argv[onlyAt + 1] ?? '').split(',');
const unknown = only.filter((name) => !(name in PARTS));
if (unknown.length > 0) throw new Error(`Unknown part ${unknown.join(', ')}; parts: ${Object.keys(PARTS).join(', ')}`);

mkdirSync(OUT_DIR, { recursive: true });
const loadBefore = load();
const results: Record<string, PartResult> = {};
for (const name of only) {
  log(name);
  Object.assign(results, await PARTS[name]!());
}
const rows = Object.values(results).flatMap((part) => part.rows);

const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: PROJECT_ROOT, encoding: 'utf8' }).trim();
const machine = {
  node: process.version,
  cpus: cpus().length,
  cpuModel: cpus()[0]?.model ?? 'unknown',
  loadBefore,
  loadAfter: load(),
  seconds: round((Date.now() - started) / 1000, 0),
};
const date = new Date().toISOString();
const markdown = [
  '# Bench results',
  '',
  `\`npm run bench\` at commit ${commit}, ${date}: Node ${machine.node}, ${machine.cpus} × ${machine.cpuModel}, ` +
    `load average ${machine.loadBefore.join(' ')} before and ${machine.loadAfter.join(' ')} after, ${machine.seconds} s. ` +
    'What each figure means: docs/performance.md.',
  '',
  resultsTable(rows),
  '',
].join('\n');

const full = only.length === Object.keys(PARTS).length;
const base = full ? join(PROJECT_ROOT, 'bench', 'results') : join(OUT_DIR, 'results');
const figures = Object.fromEntries(Object.entries(results).map(([name, part]) => [name, part.figures]));
writeFileSync(`${base}.json`, `${JSON.stringify({ commit, date, machine, rows, figures }, null, 2)}\n`);
// Formatted as `npm run lint` expects of every Markdown file.
const formatted = await format(markdown, { ...(await resolveConfig(`${base}.md`)), parser: 'markdown' });
writeFileSync(`${base}.md`, formatted);
process.stdout.write(`\n${formatted}\nWrote ${base}.json and ${base}.md\n`);
const missed = rows.filter((row) => row.met === false);
if (missed.length > 0) process.stderr.write(`${missed.length} target(s) not met\n`);
