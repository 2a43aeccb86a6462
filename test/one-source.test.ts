/**
 * One source for each fact (README "Layout"): the defaults, the windows, the grace period and the
 * tables the operator tooling names are each defined once, and what the stack deploys, what the
 * functions and the CLI read, what the OpenAPI document and the docs say all follow that one
 * definition.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { graceField } from '../lib/console/keys-routes';
import { DEFAULT_GRACE } from '../lib/operator/input';
import { operatorTableNames } from '../lib/operator/context';
import { PROJECT_ROOT } from '../lib/project-paths';
import { LOCAL_API_PORT, LOCAL_HOST } from '../lib/local-defaults';
import { LOCAL_STAGE } from '../lib/local/events';
import { API_STAGE } from '../shared/api/routes';
import { OPERATOR_OUTPUTS } from '../lib/operator/target';
import { OPERATOR_TABLES, TABLE_ENV, tableDefinitions } from '../shared/data/tables';
import { WINDOW_SECONDS } from '../shared/domain/rate-limit';
import { DEFAULT_ROLLUP_RETENTION_DAYS } from '../shared/domain/rollups';
import { DEFAULT_USAGE_RETENTION_DAYS } from '../shared/domain/usage-record';
import { readRollupRetentionDays, readUsageRetentionDays } from '../shared/config/env';
import { buildStack, resourcesOfType } from './cdk/support';
import { committedContract } from './support/contract';

const { template } = buildStack();
const functions = Object.values(resourcesOfType(template, 'AWS::Lambda::Function')).map(
  (resource) => (resource.Properties.Environment?.Variables ?? {}) as Record<string, string>,
);

describe('retention defaults', () => {
  it('usage records: what the functions read without a setting is what the stack deploys', () => {
    expect(readUsageRetentionDays({})).toBe(DEFAULT_USAGE_RETENTION_DAYS);
    const deployed = functions.filter((env) => 'USAGE_RETENTION_DAYS' in env).map((env) => env.USAGE_RETENTION_DAYS);
    expect(deployed.length).toBeGreaterThanOrEqual(4);
    expect(new Set(deployed)).toEqual(new Set([String(DEFAULT_USAGE_RETENTION_DAYS)]));
  });

  it('rollups: the same for the aggregator', () => {
    expect(readRollupRetentionDays({})).toBe(DEFAULT_ROLLUP_RETENTION_DAYS);
    expect(functions.filter((env) => 'ROLLUP_RETENTION_DAYS' in env).map((env) => env.ROLLUP_RETENTION_DAYS)).toEqual([
      String(DEFAULT_ROLLUP_RETENTION_DAYS),
    ]);
  });

  it('a setting overrides both readers', () => {
    expect(readUsageRetentionDays({ USAGE_RETENTION_DAYS: '30' })).toBe(30);
    expect(readRollupRetentionDays({ ROLLUP_RETENTION_DAYS: '800' })).toBe(800);
  });
});

describe('what the operator tooling reads of a deployed stack', () => {
  it('is one list: every table the tooling names, and the key events bus', () => {
    expect(OPERATOR_OUTPUTS.map(({ envVar }) => envVar).sort()).toEqual(
      [...Object.values(TABLE_ENV), 'KEY_EVENT_BUS_NAME'].sort(),
    );
    expect(OPERATOR_TABLES.map((name) => TABLE_ENV[name]).sort()).toEqual(
      tableDefinitions.map(({ envVar }) => envVar).sort(),
    );
  });

  it('each entry is a stack output, described by the variable the tooling reads, and no other output', () => {
    const outputs = template.findOutputs('*');
    for (const { output, envVar } of OPERATOR_OUTPUTS) {
      expect(outputs[output]?.Description).toMatch(new RegExp(`^${envVar}: `));
    }
    expect(Object.keys(outputs).sort()).toEqual(['ApiBaseUrl', ...OPERATOR_OUTPUTS.map(({ output }) => output)].sort());
  });

  it('the CLI reads each table from its variable', () => {
    const env = Object.fromEntries(OPERATOR_TABLES.map((name) => [TABLE_ENV[name], `deployed-${name}`]));
    const names = operatorTableNames(env);
    for (const name of OPERATOR_TABLES) expect(names[name]).toBe(`deployed-${name}`);
  });

  it('docs/deploy.md lists the same outputs', () => {
    const deploy = readFileSync(join(PROJECT_ROOT, 'docs', 'deploy.md'), 'utf8');
    for (const { output, envVar } of OPERATOR_OUTPUTS) {
      expect(deploy).toMatch(new RegExp(`\\| \`${output}\` +\\| \`${envVar}\``));
    }
  });
});

it("rate-limit windows: the OpenAPI document's RateLimit-Policy allows exactly the windows a limit can have", () => {
  const pattern = new RegExp(committedContract().document.components.headers['RateLimit-Policy'].schema.pattern);
  const windows = [1, 2, 30, 60, 120, 600, 3600, 86400].filter((w) => pattern.test(`"key";q=5;w=${w}`));
  expect(windows).toEqual([...WINDOW_SECONDS]);
});

it('the stage: deployed, served locally and in the OpenAPI servers', () => {
  expect(
    Object.values(resourcesOfType(template, 'AWS::ApiGatewayV2::Stage')).map((stage) => stage.Properties.StageName),
  ).toEqual([API_STAGE]);
  expect(LOCAL_STAGE).toBe(API_STAGE);
  const servers = committedContract().document.servers.map((server: { url: string }) => server.url);
  expect(servers).toEqual([
    `http://${LOCAL_HOST}:${LOCAL_API_PORT}/${API_STAGE}`,
    `https://{api_id}.execute-api.{region}.amazonaws.com/${API_STAGE}`,
  ]);
});

it("roll grace: the console preselects the CLI's default", () => {
  expect(String(graceField())).toMatch(new RegExp(`<option value="${DEFAULT_GRACE}" selected>`));
  expect(String(graceField()).match(/selected/g)).toHaveLength(1);
});
