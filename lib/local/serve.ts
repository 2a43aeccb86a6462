/** `branch-api serve` / `npm start`: runs the local environment until Ctrl-C. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { offerNewLinks, untilStopped } from '../console/command';
import { startConsole } from '../console/server';
import { lines, terminal, type TerminalText } from '../operator/terminal';
import { serveDocs } from './docs';
import { startLocalEnvironment, type LocalEnvironment } from './environment';
import { logFilePath, routeLogs } from './log-routing';

export interface ServeOptions {
  port: number;
  host: string;
  dynamodbPort: number;
  dynamodbEndpoint?: string;
  dataDir?: string;
  seed?: string;
  consolePort: number;
  /** Request and aggregator logs on the terminal too (they always go to the log file). */
  verbose?: boolean;
  /** Where the logs go (LOG_FILE); default `branch-api.log` in the data directory or a temporary one. */
  logFile?: string;
}

/** What `npm start` prints once: where everything is, the demo key (its only appearance) and how to operate it. */
const bannerOf = (
  options: ServeOptions,
  environment: LocalEnvironment,
  consoleUrl: string,
  logFile: string,
): string => {
  const { gateway, demoKey, demoKeyExpiresAt, revokedDemoKeyIds, demoBranchId, dynamoEndpoint, keyEvents } =
    environment;
  const store = options.dynamodbEndpoint
    ? terminal`external ${options.dynamodbEndpoint} behind the usage change feed`
    : options.dataDir
      ? terminal`embedded, data in ${options.dataDir}`
      : 'embedded, in a temporary folder removed on stop';
  const earlier = revokedDemoKeyIds.length
    ? [terminal`  (revoked ${revokedDemoKeyIds.length} demo key(s) of earlier starts)`]
    : [];
  // The key's value appears once, in the export line; the curl line uses the variable.
  return lines([
    terminal``,
    terminal`Branch API is running at ${gateway.baseUrl}`,
    terminal`  DynamoDB:  ${dynamoEndpoint} (${store})`,
    terminal`  API docs:  ${gateway.baseUrl}/docs  (OpenAPI: ${gateway.baseUrl}/openapi.json)`,
    terminal`  Logs:      ${logFile}${options.verbose ? '' : '  (requests and the aggregator; --verbose shows them here too)'}`,
    terminal`  Key events: ${keyEvents.keyEventsFile}`,
    ...(keyEvents.signingKeyFile
      ? [terminal`  Secret scanning reports: signed with ${keyEvents.signingKeyFile}`]
      : [terminal`  Secret scanning keys: ${keyEvents.secretScanningKeysUrl}`]),
    terminal``,
    terminal`Settings console: ${consoleUrl}`,
    terminal``,
    terminal`Demo key for branch ${demoBranchId} (scope: read, expires ${demoKeyExpiresAt}):`,
    ...earlier,
    terminal`  export BRANCH_API_KEY=${demoKey}`,
    terminal`  curl -s -H "Authorization: Bearer $BRANCH_API_KEY" ${gateway.baseUrl}/v1/branch`,
    terminal``,
    terminal`Operate it from another terminal:`,
    terminal`  export DYNAMODB_ENDPOINT=${dynamoEndpoint} KEY_EVENTS_FILE=${keyEvents.keyEventsFile}`,
    terminal`  npx branch-api keys list --branch ${demoBranchId}`,
    terminal``,
    terminal`Press Ctrl-C to stop.`,
    terminal``,
  ]).text;
};

/** What a start recounted after a run that stopped without applying every call, or the repairs it could not make. */
const recoveryOf = ({ recovery }: LocalEnvironment) => {
  if (!recovery) return [];
  const said = [
    terminal`The last run stopped before its usage change feed had applied every call: the rollups of the hours it had not applied were recounted from the raw records (${recovery.calls} calls).`,
    ...recovery.recounted
      .slice(0, 10)
      .map(({ branchId, since, until }) => terminal`  ${branchId}: ${since} to ${until}`),
    ...(recovery.recounted.length > 10 ? [terminal`  … and ${recovery.recounted.length - 10} more period(s)`] : []),
  ];
  for (const { branchId, error, repair } of recovery.failed) {
    said.push(terminal`  ${branchId} could not be recounted (${error}); repair: ${repair}`);
  }
  return said;
};

export const serve = async (options: ServeOptions): Promise<void> => {
  // Without --data-dir, the store, the key events and the logs go to a folder removed on stop.
  const scratch = options.dataDir ? undefined : await mkdtemp(join(tmpdir(), 'branch-api-'));
  const removeScratch = () => (scratch ? rm(scratch, { recursive: true, force: true }) : undefined);
  const logs = await routeLogs(
    options.logFile ?? (await logFilePath(process.env, options.dataDir ?? scratch)),
    options.verbose === true,
  );
  /** A start that failed: its one-line error, and nothing left behind. */
  const fail = async (said: TerminalText) => {
    process.stderr.write(lines([said, terminal``]).text);
    process.exitCode = 1;
    await logs.close();
    await removeScratch();
  };
  let environment;
  try {
    environment = await startLocalEnvironment({
      ...(scratch ? { scratchDir: scratch } : {}),
      port: options.port,
      host: options.host,
      dynamoPort: options.dynamodbPort,
      ...(options.dynamodbEndpoint ? { dynamoEndpoint: options.dynamodbEndpoint } : {}),
      ...(options.dataDir ? { dataDir: options.dataDir } : {}),
      ...(options.seed ? { seedFile: options.seed } : {}),
      staticFiles: serveDocs,
    });
  } catch (error) {
    return fail(terminal`error: ${error instanceof Error ? error.message : String(error)}`);
  }
  const recovered = recoveryOf(environment);
  if (recovered.length) process.stderr.write(lines([...recovered, terminal``]).text);
  const { demoBranchId } = environment;
  let settings;
  try {
    // On loopback whatever --host says: the console manages keys (docs/console.md).
    settings = await startConsole({ port: options.consolePort, branches: [demoBranchId] });
  } catch (error) {
    await environment.close();
    return fail(
      (error as NodeJS.ErrnoException).code === 'EADDRINUSE'
        ? terminal`error: Port ${options.consolePort} on 127.0.0.1 is already in use; set CONSOLE_PORT to another port`
        : terminal`error: ${String(error)}`,
    );
  }
  // Listening for Ctrl-C before the banner invites it: a quick one must find the handler.
  const stopOffering = offerNewLinks(settings);
  const stopped = untilStopped(() => {
    stopOffering();
    return Promise.all([settings.close(), environment.close()])
      .then(() => logs.close())
      .then(removeScratch);
  });
  logs.print(bannerOf(options, environment, settings.url, logs.file));
  await stopped;
};
