/**
 * A child process for the kill tests (test/local/usage-kill-*.test.ts), started ahead of its use
 * so its modules are loaded by then: it prints `ready`, then runs the one command it reads on its
 * stdin. It speaks on file descriptor 3 (its stdout carries the aggregator's log). The tests SIGKILL it.
 *
 * - `stack <data dir>`: the local stack's store and usage change feed as `npm start` composes
 *   them (lib/local/environment.ts) — the embedded DynamoDB on the data directory, the feed in
 *   front of it, the aggregator behind — without the API and the console. Prints one JSON line
 *   once it serves (`{ endpoint, recovery }`), then answers each `drain` with `drained` once the
 *   feed holds nothing.
 * - `rebuild <endpoint> <branch> <since> <until>`: `usage rebuild` as the CLI runs it, except that
 *   its wait for the longest lag is the test's: it prints `wait` and goes on at the next line (the
 *   test drains the feed in between: the lag has passed). Prints the result as JSON.
 */
import { writeSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { startEmbeddedDynamo } from '../../lib/local/dynamo';
import { startUsageChangeFeed } from '../../lib/local/usage-change-feed';
import { createOperatorContext, operatorTableNames } from '../../lib/operator/context';
import { ensureTables } from '../../lib/operator/tables';
import { rebuildRollups } from '../../lib/operator/usage-rebuild';
import { tableDefinitions } from '../../shared/data/tables';

const input = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const next = async () => String((await input.next()).value ?? '');
const say = (line: string) => writeSync(3, `${line}\n`);

const stack = async (dataDir: string) => {
  const dynamo = await startEmbeddedDynamo({ dataDir });
  const feed = await startUsageChangeFeed({
    target: dynamo.endpoint,
    store: dynamo.serve,
    usageTable: operatorTableNames(process.env).usage,
    batchWindowMs: Number(process.env.FEED_WINDOW_MS ?? 1000),
    onError: (error) => process.stderr.write(`Usage change feed: ${(error as Error).message}\n`),
  });
  process.env.DYNAMODB_ENDPOINT = feed.endpoint;
  const ctx = createOperatorContext(process.env);
  for (const { name, envVar } of tableDefinitions) process.env[envVar] = ctx.tables[name];
  await ensureTables(ctx.client, ctx.tables);
  const recovery = await feed.begin(ctx);
  say(JSON.stringify({ endpoint: feed.endpoint, recovery: recovery ?? null }));
  for (;;) if ((await next()) === 'drain') await feed.drain().then(() => say('drained'));
};

const rebuild = async (endpoint: string, branchId: string, since: string, until: string) => {
  const ctx = createOperatorContext({ ...process.env, DYNAMODB_ENDPOINT: endpoint });
  const wait = async () => {
    say('wait');
    await next();
  };
  say(JSON.stringify(await rebuildRollups(ctx, { branchId, since, until, maxLagSeconds: 1, wait })));
  process.exit(0);
};

say('ready');
const [command, ...args] = (await next()).split(' ');
if (command === 'stack') await stack(args[0]!);
else await rebuild(args[0]!, args[1]!, args[2]!, args[3]!);
