/**
 * The CLI at 80 columns: every command's --help, and the usage and activity tables, which keep the
 * time to the second and the call or action whole while other columns give way.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { activityTable, usageTable } from '../../bin/commands/tables';
import { PROJECT_ROOT } from '../../lib/project-paths';
import type { ActivityEntry } from '../../shared/domain/key-activity';
import type { UsageRecord } from '../../shared/domain/usage-record';

const WIDTH = 80;
const widest = (text: string) => Math.max(...text.split('\n').map((line) => [...line].length));

/** Every command's --help at 80 columns, by its full name (test/support/help-texts.ts). */
const helps = JSON.parse(
  execFileSync(process.execPath, ['--import', 'tsx', join(PROJECT_ROOT, 'test', 'support', 'help-texts.ts')], {
    cwd: PROJECT_ROOT,
    encoding: 'utf8',
    timeout: 20_000,
  }),
) as Record<string, string>;

it('has help for every command (keys, usage and their subcommands among them)', () => {
  const names = Object.keys(helps);
  expect(names).toEqual(
    expect.arrayContaining([
      'branch-api',
      'branch-api keys list',
      'branch-api keys activity',
      'branch-api usage replay',
      'branch-api tables create',
    ]),
  );
  expect(names.length).toBeGreaterThanOrEqual(20);
});

it.each(Object.entries(helps))('%s --help fits 80 columns', (_, help) => {
  expect(help).toContain('Usage:');
  expect(widest(help)).toBeLessThanOrEqual(WIDTH);
});

const TIME = '2026-11-28T05:00:21.123Z';
const call = (path: string, i = 0): UsageRecord => ({
  key_id: 'key_z58ma-huyMgb0e2D',
  branch_id: 'br_demo',
  method: 'GET',
  path,
  route: 'GET /v1/payment-providers/{id}',
  status: 404,
  response_time_ms: 12,
  timestamp: TIME,
  request_id: `6f1c2a9e-3b4d-4e5f-8a7b-9c0d1e2f3a4${i}`,
});

describe('usage at 80 columns', () => {
  const records = [call('/api/v1/payment-providers/pp_stripe'), call('/api/v1/branch', 1)];

  it.each([true, false])('with --key %s: the time to the second and the route whole, in 80 columns', (oneKey) => {
    const text = usageTable(records, { oneKey, width: WIDTH }).text;
    const [header, first] = text.split('\n');
    expect(widest(text)).toBeLessThanOrEqual(WIDTH);
    expect(header).toMatch(/^TIME \(UTC\)\s+/);
    expect(first).toMatch(/^2026-11-28 05:00:21\s+/);
    // The route as the spec and the console spell it, never the raw path.
    expect(first).toContain('GET /v1/payment-providers/{id}');
    expect(first).not.toContain('/api/');
    expect(first).toMatch(/\s404\s+12$/);
    // The request id gives way first, and says so; the key column only without --key.
    expect(text).toContain('(not shown at this width: REQUEST ID; --json has all)');
    expect(header!.includes('KEY')).toBe(!oneKey);
  });

  it('cuts an unknown route’s raw path past the width, never the time', () => {
    const unknown = { ...call(`/api/v1/${'x'.repeat(200)}`), route: '$default' };
    const text = usageTable([unknown], { oneKey: true, width: WIDTH }).text;
    expect(widest(text)).toBeLessThanOrEqual(WIDTH);
    expect(text.split('\n')[1]).toMatch(/^2026-11-28 05:00:21 .*GET \/api\/v1\/x+…/);
  });

  it('piped (no width): every column whole', () => {
    const text = usageTable(records, { oneKey: false, width: undefined }).text;
    expect(text).toContain(records[0]!.request_id);
    expect(text).toContain(records[0]!.key_id);
  });
});

describe('keys activity at 80 columns', () => {
  const entry: ActivityEntry = {
    activity_id: 'key_z58ma-huyMgb0e2D#2',
    branch_id: 'br_demo',
    key_id: 'key_z58ma-huyMgb0e2D',
    key_name: 'POS sync for the shop on the corner',
    action: 'updated',
    actor: 'arn:aws:sts::123456789012:assumed-role/operators/someone@example.com',
    at: TIME,
    changes: {
      name: { before: 'POS sync', after: 'POS sync for the shop on the corner' },
      rate_limit: { before: null, after: '20/s' },
    },
  } as ActivityEntry;

  it.each([true, false])('with --key %s: the time to the second and the action whole', (oneKey) => {
    const text = activityTable([entry], { oneKey, width: WIDTH }).text;
    const [header, row] = text.split('\n');
    expect(widest(text)).toBeLessThanOrEqual(WIDTH);
    expect(header).toMatch(/^TIME \(UTC\)\s+ACTION\s+/);
    expect(row).toMatch(/^2026-11-28 05:00:21\s+updated\s+/);
    expect(header!.includes('KEY')).toBe(!oneKey);
    // Who, short; each change whole on its own line, once.
    expect(row).toContain(oneKey ? ' operators/someone@example.com' : ' operators/');
    expect(row).not.toContain('arn:aws');
    expect(text.split('\n').slice(2)).toEqual([
      '  name: POS sync → POS sync for the shop on the corner',
      '  rate_limit: - → 20/s',
    ]);
  });

  it('shows a roll’s new key once, and a long change cut at the width only', () => {
    const roll = {
      ...entry,
      action: 'rolled',
      changes: {
        rolled_to: { before: null, after: 'key_new' },
        scopes: { before: ['read'], after: ['x'.repeat(100)] },
      },
      details: { rolled_to: 'key_new' },
    } as ActivityEntry;
    const text = activityTable([roll], { oneKey: true, width: WIDTH }).text;
    expect(text.match(/rolled_to/g)).toHaveLength(1);
    expect(widest(text)).toBeLessThanOrEqual(WIDTH);
    expect(text).toMatch(/ {2}scopes: read → x+…$/);
    // Piped: the whole actor.
    expect(activityTable([roll], { oneKey: true, width: undefined }).text).toContain(entry.actor);
  });
});
