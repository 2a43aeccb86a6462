/**
 * npm run load [-- --requests 10000 --connections 32 --max-seconds 300 --json]
 *
 * Starts an embedded DynamoDB (dynalite, in memory) with fresh tables, seeds two branches and a
 * set of keys, serves the real handlers through the local gateway on a free port, drives it with
 * autocannon, then checks every status and the usage table (one record per request made with a
 * known key, matched by X-Request-Id); then a runaway key at ten times its limit or more beside a
 * well-behaved key. Prints the figures; exits 1 if an invariant broke. The scenarios are in
 * bench/reliability/, which the CI-size reliability tests run too.
 */
import { parseArgs } from 'node:util';
import { startEmbeddedDynamo } from '../lib/local/dynamo';
import { tableDefinitions } from '../shared/data/tables';
import { loggedUsageRecords, unattributedRequests, type LogEntry } from '../bench/reliability/ledger';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '10000' },
    connections: { type: 'string', default: '32' },
    'max-seconds': { type: 'string', default: '300' },
    'runaway-seconds': { type: 'string', default: '3' },
    json: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});

if (values.help) {
  console.log(
    'Usage: npm run load -- [--requests N] [--connections N] [--max-seconds N] [--runaway-seconds N] [--json]',
  );
  process.exit(0);
}

const positive = (name: string, raw: string): number => {
  const value = Number(raw);
  if (!Number.isInteger(value) || value <= 0) {
    console.error(`--${name} must be a positive whole number, got "${raw}"`);
    process.exit(2);
  }
  return value;
};
const requests = positive('requests', values.requests);
const connections = positive('connections', values.connections);
const maxSeconds = positive('max-seconds', values['max-seconds']);
const runawaySeconds = positive('runaway-seconds', values['runaway-seconds']);

const dynamo = await startEmbeddedDynamo();
// The handlers read their configuration when the gateway imports them: set it first.
const run = `load-${Date.now().toString(36)}`;
Object.assign(process.env, {
  DYNAMODB_ENDPOINT: dynamo.endpoint,
  AWS_REGION: process.env.AWS_REGION ?? 'local',
  ...Object.fromEntries(tableDefinitions.map((table) => [table.envVar, `${run}-${table.localName}`])),
  // INFO: the "Call without a known key" lines are needed to account for every 503 (read below).
  POWERTOOLS_LOG_LEVEL: process.env.POWERTOOLS_LOG_LEVEL ?? 'INFO',
});
const { formatReport, loadProblems, runLoad } = await import('../bench/reliability/mixed-load');
const { formatRunaway, runawayProblems, runRunaway } = await import('../bench/reliability/runaway');

// The service's JSON log lines are read, not printed with the figures: a usage record it could not
// store is logged whole (it counts as kept), a call it could not tie to a key is logged as such;
// warnings and errors go on to stderr.
const entries: LogEntry[] = [];
let logText = '';
const writeStdout = process.stdout.write.bind(process.stdout);
process.stdout.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
  const text = String(chunk);
  if (!text.startsWith('{')) return writeStdout(chunk, ...rest);
  logText += text;
  for (const line of text.split('\n').filter(Boolean)) {
    try {
      const entry = JSON.parse(line) as LogEntry;
      entries.push(entry);
      if (entry.level === 'ERROR' || entry.level === 'WARN') process.stderr.write(`${line}\n`);
    } catch {
      // not a log entry
    }
  }
  return true;
}) as typeof process.stdout.write;

if (!values.json) console.error(`Load: ${requests} requests at concurrency ${connections} on ${dynamo.endpoint} ...`);
let exitCode: number;
try {
  const report = await runLoad({
    requests,
    connections,
    maxSeconds,
    loggedRecords: () => loggedUsageRecords(entries),
    unattributed: () => unattributedRequests(entries),
    logText: () => logText,
  });
  // Then a runaway key beside a well-behaved one (docs/decisions.md "Rate limits").
  const runaway = await runRunaway({ seconds: runawaySeconds });
  const problems = [...loadProblems(report), ...runawayProblems(runaway)];
  if (values.json) {
    const { records, ...rest } = report;
    const { expected, inTable, logged: onlyLogged } = records;
    const sizes = (['lost', 'unexpected', 'duplicates', 'mismatched'] as const).map((n) => [n, records[n].length]);
    const summary = {
      ...rest,
      records: { expected, inTable, onlyLogged, ...Object.fromEntries(sizes) },
      runaway,
      problems,
    };
    // Past the log reader above, which would take a line starting with `{` for a log entry.
    writeStdout(`${JSON.stringify(summary, null, 2)}\n`);
  } else {
    console.log(`\nBranch API load: ${new Date().toISOString()}, Node ${process.version}\n`);
    console.log(formatReport(report));
    console.log(`\n${formatRunaway(runaway)}`);
    console.log(
      problems.length ? `\nFAILED:\n${problems.map((p) => `  - ${p}`).join('\n')}` : '\nAll invariants held.',
    );
  }
  exitCode = problems.length ? 1 : 0;
} catch (error) {
  console.error('Load run failed:', error instanceof Error ? error.message : error);
  exitCode = 1;
} finally {
  await dynamo.close();
}
process.exit(exitCode);
