/**
 * `keys create --rate-limit` and `keys list` through the real CLI (a child process), and the one
 * parser behind them, DEFAULT_RATE_LIMIT and the stack prop (shared/domain/rate-limit.ts).
 */
import { OperatorError } from '../../lib/operator/errors';
import { parseRateLimitText } from '../../lib/operator/input';
import { parseRateLimit, formatRateLimit, InvalidRateLimitError } from '../../shared/domain/rate-limit';
import { runCli } from '../support/cli';
import { fixtureKeys, setUpBranches } from '../support/harness';
import { mainBranch } from '../support/fixtures';

const FORMAT = 'Rate limit must be a whole number of calls per s, min or h, written like 50/s, 600/min or 10000/h';
const TOO_SMALL = 'Rate limit must allow at least 1 call per window';
const TOO_LARGE = 'Rate limit must allow at most 1000000 calls per window';

const BAD: [string, string][] = [
  ['0/s', TOO_SMALL],
  ['0/h', TOO_SMALL],
  ['-5/s', FORMAT],
  ['1.5/s', FORMAT],
  ['1e3/s', FORMAT],
  ['10/d', FORMAT],
  ['10/sec', FORMAT],
  ['10/S', FORMAT],
  ['10', FORMAT],
  ['/s', FORMAT],
  ['', FORMAT],
  ['007/s', FORMAT],
  [' 5/s', FORMAT],
  ['5 /s', FORMAT],
  ['5/s\n', FORMAT],
  ['5/s\u001b[31m', FORMAT],
  ['1000001/s', TOO_LARGE],
  ['9999999999999999/h', TOO_LARGE],
  ['99999999999999999999999/min', FORMAT],
];

describe('parseRateLimit', () => {
  it.each([
    ['1/s', 1, 1],
    ['50/s', 50, 1],
    ['600/min', 600, 60],
    ['1000000/h', 1_000_000, 3600],
  ])('reads %s', (text, limit, windowSeconds) => {
    expect(parseRateLimit(text)).toEqual({ limit, windowSeconds });
    expect(formatRateLimit(parseRateLimit(text))).toBe(text);
  });

  it.each(BAD)('refuses %j', (text, message) => {
    expect(() => parseRateLimit(text)).toThrow(new InvalidRateLimitError(message));
    // As the CLI and the console read it: about the rate_limit field, its message after the field's name.
    try {
      parseRateLimitText(text);
      throw new Error('not refused');
    } catch (error) {
      expect(error).toBeInstanceOf(OperatorError);
      expect(error).toMatchObject({ code: 'invalid_input', field: 'rate_limit', detail: `: ${message}` });
    }
  });
});

const createWithLimit = (value: string) =>
  runCli(['keys', 'create', '--branch', mainBranch.id, '--scopes', 'read', '--rate-limit', value]);

describe('keys create --rate-limit', () => {
  beforeAll(async () => {
    await setUpBranches();
  });

  it('stores the limit and keys list shows it; a key without one shows the default', async () => {
    const created = await createWithLimit('20/min');
    expect(created.code).toBe(0);
    expect(created.stdout).toContain('rate limit: 20/min');
    const list = await runCli(['keys', 'list', '--branch', mainBranch.id]);
    expect(list.code).toBe(0);
    expect(list.stdout.split('\n')[0]).toContain('RATE LIMIT');
    expect(list.stdout).toMatch(/20\/min/);
    expect(list.stdout).toMatch(/\bdefault\b/);
    const json = await runCli(['keys', 'list', '--branch', mainBranch.id, '--json']);
    expect(json.json.map((key: { rate_limit?: string }) => key.rate_limit ?? 'default').sort()).toEqual([
      '20/min',
      'default',
    ]);
  });

  it('refuses bad values with exit code 1 and one line naming the option, creating nothing', async () => {
    const before = (await fixtureKeys.listByBranch(mainBranch.id)).length;
    // One value of each message, and one with a terminal escape: each is a child process, and every
    // value's message is checked above, through the parser the CLI calls.
    const shown = BAD.filter(([value]) => ['0/s', '-5/s', '5/s\u001b[31m', '1000001/s'].includes(value));
    expect(shown).toHaveLength(4);
    for (let start = 0; start < shown.length; start += 4) {
      await Promise.all(
        shown.slice(start, start + 4).map(async ([value, message]) => {
          const res = await createWithLimit(value);
          const lines = res.stderr.split('\n').filter((line) => line && !line.includes('nodedir'));
          expect([value, res.code, lines]).toEqual([value, 1, [`error: --rate-limit: ${message}`]]);
          expect(res.stdout).toBe('');
        }),
      );
    }
    expect(await fixtureKeys.listByBranch(mainBranch.id)).toHaveLength(before);
  });
});
