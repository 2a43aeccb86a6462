/** `branch-api serve` / `npm start`: runs the local stack until Ctrl-C. */
import { untilStopped } from '../console/command';
import { startConsole } from '../console/server';
import { serveDocs } from './docs';
import { startLocalStack } from './stack';

export interface ServeOptions {
  port: number;
  host: string;
  dynamodbPort: number;
  dynamodbEndpoint?: string;
  dataDir?: string;
  seed?: string;
  consolePort: number;
}

export const serve = async (options: ServeOptions): Promise<void> => {
  let stack;
  try {
    stack = await startLocalStack({
      port: options.port,
      host: options.host,
      dynamoPort: options.dynamodbPort,
      ...(options.dynamodbEndpoint ? { dynamoEndpoint: options.dynamodbEndpoint } : {}),
      ...(options.dataDir ? { dataDir: options.dataDir } : {}),
      ...(options.seed ? { seedFile: options.seed } : {}),
      staticFiles: serveDocs,
    });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`error: ${message}\n`);
    process.exitCode = 1;
    return;
  }
  const { gateway, demoKey, demoBranchId, dynamoEndpoint } = stack;
  let settings;
  try {
    // On loopback whatever --host says: the console manages keys (docs/console.md).
    settings = await startConsole({ port: options.consolePort, branches: [demoBranchId] });
  } catch (error) {
    await stack.close();
    const busy = (error as NodeJS.ErrnoException).code === 'EADDRINUSE';
    process.stderr.write(
      `error: ${busy ? `Port ${options.consolePort} on 127.0.0.1 is already in use; set CONSOLE_PORT to another port` : String(error)}\n`,
    );
    process.exitCode = 1;
    return;
  }
  process.stdout.write(
    [
      '',
      `Branch API is running at ${gateway.baseUrl}`,
      `  DynamoDB:  ${dynamoEndpoint} (${
        options.dynamodbEndpoint
          ? 'external'
          : options.dataDir
            ? `embedded, data in ${options.dataDir}`
            : 'embedded, in memory'
      })`,
      `  API docs:  ${gateway.baseUrl}/docs  (OpenAPI: ${gateway.baseUrl}/openapi.json)`,
      '',
      `Settings console: ${settings.url}`,
      '',
      `Demo key for branch ${demoBranchId} (scope: read):`,
      `  ${demoKey}`,
      '',
      'Try it:',
      `  export BRANCH_API_KEY=${demoKey}`,
      `  curl -s -H "Authorization: Bearer $BRANCH_API_KEY" ${gateway.baseUrl}/v1/branch`,
      '',
      'Operate it from another terminal:',
      `  export DYNAMODB_ENDPOINT=${dynamoEndpoint}`,
      `  npx branch-api keys list --branch ${demoBranchId}`,
      '',
      'Press Ctrl-C to stop.',
      '',
    ]
      .filter((line, index, lines) => line !== '' || lines[index - 1] !== '')
      .join('\n'),
  );

  await untilStopped(() => Promise.all([settings.close(), stack.close()]).then(() => undefined));
};
