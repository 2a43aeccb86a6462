/**
 * A child process for the kill tests (test/local/usage-kill.test.ts), started ahead of its use: it
 * loads what its role (its one argument) needs, says `ready`, then takes lines on its stdin. It
 * speaks on file descriptor 3 (its stdout carries the aggregator's log). The tests SIGKILL it.
 *
 * - `stack`: the local stack's store and usage change feed as `npm start` composes them
 *   (lib/local/environment.ts) — the embedded DynamoDB on a data directory, the feed in front of
 *   it, the aggregator behind — without the API and the console. Its first line is `<data dir>
 *   <batching window in ms>`; it says `{ endpoint, recovery }` once it serves, then takes `drain`
 *   (says `drained` once the feed holds nothing) and `rebuild …` lines (as below, in this process).
 * - `rebuild`: its one line is `rebuild <endpoint> <branch> <hour>`.
 *
 * A rebuild runs as the CLI runs it, except that its wait for the longest lag is the test's: it
 * says `wait` and goes on at a `go` line (the test drains the feed in between: the lag has
 * passed); it says its result as JSON.
 */
import { writeSync } from 'node:fs';
import { createInterface } from 'node:readline';

const input = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const next = async () => String((await input.next()).value ?? '');
const say = (line: string) => writeSync(3, `${line}\n`);
const [{ createOperatorContext }, { rebuildRollups }] = await Promise.all([
  import('../../lib/operator/context'),
  import('../../lib/operator/usage-rebuild'),
]);
let go: () => void = () => undefined;

const rebuild = async (line: string) => {
  const [, endpoint, branchId, since] = line.split(' ') as [string, string, string, string];
  const ctx = createOperatorContext({ ...process.env, DYNAMODB_ENDPOINT: endpoint });
  const until = new Date(Date.parse(since) + 3_600_000).toISOString();
  const wait = () => new Promise<void>((resolve) => ((go = resolve), say('wait')));
  say(JSON.stringify(await rebuildRollups(ctx, { branchId, since, until, maxLagSeconds: 1, wait })));
};

const stack = async () => {
  const [{ startEmbeddedDynamo }, { startUsageChangeFeed }, { ensureTables }, { tableDefinitions }] = await Promise.all(
    [
      import('../../lib/local/dynamo'),
      import('../../lib/local/usage-change-feed'),
      import('../../lib/operator/tables'),
      import('../../shared/data/tables'),
    ],
  );
  const { operatorTableNames } = await import('../../lib/operator/context');
  say('ready');
  const [dataDir, windowMs] = (await next()).split(' ') as [string, string];
  const dynamo = await startEmbeddedDynamo({ dataDir });
  const feed = await startUsageChangeFeed({
    target: dynamo.endpoint,
    store: dynamo.serve,
    usageTable: operatorTableNames(process.env).usage,
    batchWindowMs: Number(windowMs),
    onError: (error) => process.stderr.write(`Usage change feed: ${(error as Error).message}\n`),
  });
  process.env.DYNAMODB_ENDPOINT = feed.endpoint;
  const ctx = createOperatorContext(process.env);
  for (const { name, envVar } of tableDefinitions) process.env[envVar] = ctx.tables[name];
  await ensureTables(ctx.client, ctx.tables);
  const recovery = await feed.begin(ctx);
  say(JSON.stringify({ endpoint: feed.endpoint, recovery: recovery ?? null }));
  for (;;) {
    const line = await next();
    if (line === 'drain') await feed.drain().then(() => say('drained'));
    else if (line === 'go') go();
    else if (line.startsWith('rebuild ')) void rebuild(line).catch((error: unknown) => say(String(error)));
  }
};

if (process.argv[2] === 'stack') await stack();
else {
  say('ready');
  const done = rebuild(await next());
  void (async () => {
    for (;;) if ((await next()) === 'go') go();
  })();
  await done;
  process.exit(0);
}
