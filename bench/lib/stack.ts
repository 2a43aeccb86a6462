/** The local stack as a user starts it (`npm start`), and keys made for it with the CLI. */
import { demoBranch } from './fixtures';
import { CLI, getOk, runCli, startNode, type Started } from './processes';

export interface LocalStack {
  process: Started;
  baseUrl: string;
  dynamoEndpoint: string;
  demoKey: string;
  /** From spawn to the first 200 of GET /v1/branch with the demo key, in ms. */
  firstOkMs: number;
  /** API calls made so far: the first 200. */
  callsMade: number;
}

/** The banner's value after `label`, e.g. `running at http://…`. */
const bannerValue = (banner: string, label: RegExp): string => {
  const value = label.exec(banner)?.[1];
  if (!value) throw new Error(`The local stack's banner has no ${label}: ${banner}`);
  return value;
};

/** `npm start` (bin/branch-api.js serve) on free ports, until its banner and its first 200; `dataDir`: `--data-dir`. */
export const startLocalStack = async (dataDir?: string): Promise<LocalStack> => {
  const started = await startNode(
    [CLI, 'serve', '--port', '0', '--dynamodb-port', '0', '--console-port', '0'].concat(
      dataDir ? ['--data-dir', dataDir] : [],
    ),
    {},
    /Press Ctrl-C to stop/,
  );
  const banner = started.output();
  const baseUrl = bannerValue(banner, /running at (http\S+)/);
  const demoKey = bannerValue(banner, /BRANCH_API_KEY=(\S+)/);
  try {
    await getOk(`${baseUrl}/v1/branch`, { authorization: `Bearer ${demoKey}` });
  } catch (error) {
    await started.stop();
    throw error;
  }
  return {
    process: started,
    baseUrl,
    dynamoEndpoint: bannerValue(banner, /DYNAMODB_ENDPOINT=(\S+)/),
    demoKey,
    firstOkMs: performance.now() - started.spawnedAt,
    callsMade: 1,
  };
};

/** `keys create` with the CLI, `count` times: `read` keys of the demo branch with `rateLimit`. */
export const createKeys = (dynamoEndpoint: string, count: number, rateLimit: string): string[] =>
  Array.from({ length: count }, (_, i) => {
    const { stdout } = runCli(
      ['keys', 'create', '--branch', demoBranch.id, '--scopes', 'read', '--name', `bench ${i + 1}`].concat([
        '--rate-limit',
        rateLimit,
        '--json',
      ]),
      { DYNAMODB_ENDPOINT: dynamoEndpoint },
    );
    return (JSON.parse(stdout) as { key: string }).key;
  });
