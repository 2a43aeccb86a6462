/**
 * The deploy options (`cdk deploy -c name=value`, lib/infra/context.ts): a typo can't slip by, a
 * bad value is named by its option with its rule, and no stack is chosen without naming it. The
 * typo is tried through the real `cdk synth` CLI too, as an operator types it.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BranchApiStack } from '../../lib/infra/branch-api-stack';
import { CONTEXT_KEYS, contextOptionError, readAppSettings } from '../../lib/infra/context';
import { PROJECT_ROOT } from '../../lib/project-paths';
import { newApp } from './support';

const settingsFrom = (context: Record<string, unknown>) => readAppSettings(newApp({ context }).node);
const problemsOf = (context: Record<string, unknown>) => {
  try {
    settingsFrom(context);
  } catch (error) {
    return (error as Error).message.split('\n');
  }
  throw new Error('accepted');
};
const KNOWN = `The options are: ${CONTEXT_KEYS.join(', ')} (docs/deploy.md "Deploy")`;

describe('app context (cdk deploy -c ...)', () => {
  it('needs the stage named: nothing defaults to production', () => {
    expect(problemsOf({})).toEqual([
      '-c stage=<name> is required: the stack is BranchApi-<name> (-c stage=prod, -c stage=dev); ' +
        'nothing is synthesized or deployed without naming it',
    ]);
    expect(settingsFrom({ stage: 'prod' })).toEqual({ stage: 'prod', stackProps: {} });
  });

  it('leaves CDK’s own keys to CDK: cdk.json’s feature flags, its settings, lookups and switches', () => {
    // newApp carries cdk.json's context and `aws:cdk:bundling-stacks`; these are what the CLI and cdk.context.json add.
    const cdkOwn = {
      'aws:cdk:enable-path-metadata': true,
      'aws:cdk:version-reporting': true,
      'availability-zones:account=123456789012:region=eu-west-1': ['eu-west-1a'],
      'acknowledged-issue-numbers': [32775],
      'cli-telemetry': false,
      '@aws-cdk/core:someFutureFlag': true,
    };
    expect(settingsFrom({ ...cdkOwn, stage: 'dev' })).toEqual({ stage: 'dev', stackProps: {} });
  });

  it('parses the string values -c gives', () => {
    expect(
      settingsFrom({
        stage: 'dev',
        destroyData: 'true',
        throttleRate: '10',
        throttleBurst: '20',
        logRetentionDays: '7',
        usageRetentionDays: '14',
        defaultRateLimit: '20/s',
        logLevel: 'debug',
        alarmTopicArn: 'arn:aws:sns:eu-west-1:123456789012:alarms',
        serverErrorRatePercent: '1',
        reservedConcurrencyEndpoint: '40',
        reservedConcurrencyAggregator: '2',
        bundlingLogs: 'true',
      }),
    ).toEqual({
      stage: 'dev',
      stackProps: {
        destroyData: true,
        throttle: { rateLimit: 10, burstLimit: 20 },
        logRetention: 7,
        usageRetentionDays: 14,
        defaultRateLimit: '20/s',
        logLevel: 'DEBUG',
        alarmTopicArn: 'arn:aws:sns:eu-west-1:123456789012:alarms',
        serverErrorRatePercent: 1,
        reservedConcurrency: { endpoint: 40, aggregator: 2 },
      },
    });
  });

  it.each<[Record<string, unknown>, string]>([
    [{ stgae: 'dev' }, `unknown context option -c stgae=dev; did you mean stage? ${KNOWN}`],
    [{ destroy_data: 'true' }, `unknown context option -c destroy_data=true; did you mean destroyData? ${KNOWN}`],
    [{ 'destroy-data': 'true' }, `unknown context option -c destroy-data=true; did you mean destroyData? ${KNOWN}`],
    [{ LOGLEVEL: 'debug' }, `unknown context option -c LOGLEVEL=debug; did you mean logLevel? ${KNOWN}`],
  ])('refuses the unknown %j, naming the closest option and listing them all', (context, problem) => {
    expect(problemsOf({ stage: 'dev', ...context })).toEqual([problem]);
  });

  it('refuses a key that only an object prototype knows', () => {
    expect(problemsOf({ stage: 'dev', constructor: 'x' })).toEqual([
      expect.stringMatching(/^unknown context option -c constructor=x; did you mean \w+\?/),
    ]);
  });

  it.each<[Record<string, unknown>, string]>([
    [{ destroyData: 'yes' }, '-c destroyData=yes: must be true or false'],
    [{ throttleRate: 'fast' }, '-c throttleRate=fast: must be a number'],
    [{ usageRetentionDays: '' }, '-c usageRetentionDays=: must be a number'],
    [
      { stage: 'Prod_1' },
      '-c stage=Prod_1: must be lower-case letters, digits and dashes, starting with a letter, at most 20 characters',
    ],
    [{ reservedConcurrencyFallback: 'many' }, '-c reservedConcurrencyFallback=many: must be a number'],
    [{ alarmEmail: { to: 'ops' } }, '-c alarmEmail={"to":"ops"}: must be text'],
  ])('refuses %j, naming the option and its rule', (context, problem) => {
    expect(problemsOf({ stage: 'dev', ...context })).toEqual([problem]);
  });

  it('reports every problem at once, one line each', () => {
    expect(problemsOf({ stgae: 'dev', throttleRate: 'fast' })).toEqual([
      `unknown context option -c stgae=dev; did you mean stage? ${KNOWN}`,
      '-c throttleRate=fast: must be a number',
      expect.stringMatching(/^-c stage=<name> is required/),
    ]);
  });

  /** What bin/app.ts does: the stack's own rules, said of the options that set the props. */
  const refusalOf = (context: Record<string, unknown>) => {
    const app = newApp({ context: { stage: 'dev', ...context } });
    try {
      new BranchApiStack(app, 'Dev', readAppSettings(app.node).stackProps);
    } catch (error) {
      return contextOptionError(error, app.node)?.message;
    }
    return 'accepted';
  };

  it.each<[Record<string, unknown>, string]>([
    [{ reservedConcurrencyEndpoint: '0' }, '-c reservedConcurrencyEndpoint=0: must be a positive integer, got 0'],
    [{ throttleBurst: '2.5' }, '-c throttleBurst=2.5: must be a positive integer (requests), got 2.5'],
    [{ logRetentionDays: '31' }, '-c logRetentionDays=31: must be a finite CloudWatch Logs retention in days'],
    [{ defaultRateLimit: '5/d' }, '-c defaultRateLimit=5/d: Rate limit must be a whole number'],
    [{ alarmEmail: 'ops at example' }, '-c alarmEmail=ops at example: must be an e-mail address'],
    [{ rollupRetentionDays: '0' }, '-c rollupRetentionDays=0: must be a positive integer, got 0'],
    [
      { reservedConcurrencyEndpoint: '300' },
      '-c reservedConcurrencyEndpoint=300: adds up to 1200, more than the 900 a quota of 1000 leaves',
    ],
  ])('says the stack’s rule for %j of the -c option, not of an internal prop', (context, start) => {
    expect(refusalOf(context)).toMatch(new RegExp(`^${start.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
  });

  it('lists in docs/deploy.md every option, and no other', () => {
    const deployGuide = readFileSync(join(PROJECT_ROOT, 'docs', 'deploy.md'), 'utf8');
    const table = deployGuide.slice(
      deployGuide.indexOf('| Option '),
      deployGuide.indexOf('\n\n', deployGuide.indexOf('| Option ')),
    );
    const documented = [...table.matchAll(/^\| (.+?) \|/gm)].flatMap(([, cell]) =>
      [...cell!.matchAll(/`(\w+)`/g)].map(([, name]) => name),
    );
    expect(documented.sort()).toEqual([...CONTEXT_KEYS].sort());
  });
});

describe('the real cdk synth', () => {
  type Run = { code: number; stderr: string; synthesized: string[] };
  const runs: Record<string, Promise<Run>> = {};
  const out = mkdtempSync(join(tmpdir(), 'cdk-context-'));
  afterAll(() => rmSync(out, { recursive: true, force: true }));

  const synth = (...args: string[]): Promise<Run> => {
    const output = mkdtempSync(join(out, 'run-'));
    return new Promise((resolve) => {
      execFile(
        process.execPath,
        [join(PROJECT_ROOT, 'node_modules', 'aws-cdk', 'bin', 'cdk'), 'synth', '--quiet', '--output', output, ...args],
        { cwd: PROJECT_ROOT, env: { ...process.env, CDK_DISABLE_CLI_TELEMETRY: 'true' }, timeout: 170_000 },
        (error, _stdout, stderr) =>
          resolve({
            code: error ? Number(error.code ?? 1) : 0,
            stderr,
            synthesized: readdirSync(output).filter((name) => name.endsWith('.template.json')),
          }),
      );
    });
  };

  // Both start together: each is a CDK CLI and an app process that stop before bundling.
  beforeAll(() => {
    runs.typo = synth('-c', 'stgae=dev', '-c', 'throttleRate=fast');
    runs.stackRule = synth('-c', 'stage=dev', '-c', 'reservedConcurrencyEndpoint=0');
  });
  const noTrace = (stderr: string) => expect(stderr).not.toMatch(/\n\s+at /);

  it('refuses -c stgae=dev naming stage, with each problem on its line, and synthesizes nothing', async () => {
    const { code, stderr, synthesized } = await runs.typo!;
    expect(code).not.toBe(0);
    expect(synthesized).toEqual([]);
    expect(stderr).toContain(`error: unknown context option -c stgae=dev; did you mean stage? ${KNOWN}\n`);
    expect(stderr).toContain('error: -c throttleRate=fast: must be a number\n');
    expect(stderr).toContain('error: -c stage=<name> is required');
    noTrace(stderr);
  }, 180_000);

  it('refuses a value the stack’s rule refuses, naming the -c option, with no stack trace', async () => {
    const { code, stderr } = await runs.stackRule!;
    expect(code).not.toBe(0);
    expect(stderr).toContain('error: -c reservedConcurrencyEndpoint=0: must be a positive integer, got 0\n');
    expect(stderr).not.toContain('reservedConcurrency.endpoint');
    noTrace(stderr);
  }, 180_000);
});
