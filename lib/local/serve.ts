/** `branch-api serve` / `npm start`: runs the local environment until Ctrl-C. */
import { serveDocs } from './docs';
import { startLocalEnvironment } from './environment';

export interface ServeOptions {
  port: number;
  host: string;
  dynamodbPort: number;
  dynamodbEndpoint?: string;
  dataDir?: string;
  seed?: string;
}

export const serve = async (options: ServeOptions): Promise<void> => {
  let environment;
  try {
    environment = await startLocalEnvironment({
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
  const { gateway, demoKey, demoBranchId, dynamoEndpoint } = environment;
  process.stdout.write(
    [
      '',
      `Branch API is running at ${gateway.baseUrl}`,
      `  DynamoDB:  ${dynamoEndpoint} (${
        options.dynamodbEndpoint
          ? `external ${options.dynamodbEndpoint} behind the usage change feed`
          : options.dataDir
            ? `embedded, data in ${options.dataDir}`
            : 'embedded, in memory'
      })`,
      `  API docs:  ${gateway.baseUrl}/docs  (OpenAPI: ${gateway.baseUrl}/openapi.json)`,
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

  await new Promise<void>((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      process.stdout.write('\nStopping…\n');
      environment.close().then(resolve, resolve);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
};
